"""The add-on through real bpy: registration, Simulate/Clear operators, baking, bad input."""

import os
import subprocess
import sys

import bpy
import numpy as np
import pytest

import neurok_blender
from neurok_blender import api, job
from neurok_blender.core import Conditions, simulate
from conftest import add_box, evaluated_vertices, scene_snapshot


def test_register_and_unregister_twice():
    for _ in range(2):
        neurok_blender.unregister()
        assert not hasattr(bpy.types.Object, "neurok")
        assert "simulate" not in dir(bpy.ops.neurok)
        neurok_blender.register()
        assert hasattr(bpy.types.Object, "neurok")
        assert {"simulate", "clear", "force_add", "force_remove"} <= set(dir(bpy.ops.neurok))


def test_registering_the_addon_loads_no_torch(tmp_path):
    """Blender starts as fast as without the add-on: the solver (torch) loads with the first simulation.
    The process exits at once (os._exit): bpy 4.2 crashes at shutdown once the add-on registered."""
    code = ("import os, sys; import bpy, neurok_blender; neurok_blender.register()\n"
            "print('torch' in sys.modules, flush=True); os._exit(0)")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert run.stdout.strip().splitlines()[-1] == "False", run.stderr


def test_simulate_bakes_one_linear_key_per_frame_matching_the_solver(capsys):
    obj = add_box(location=(0.0, 0.0, 2.0))
    s = obj.neurok
    s.frame_start, s.frame_end = 1, 20
    s.velocity = (1.0, 0.0, 2.0)
    s.angular_velocity = (0.0, 3.0, 1.0)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert "NeuROK: frame 19/19" in capsys.readouterr().out  # background mode prints progress

    blocks = obj.data.shape_keys.key_blocks
    assert [b.name for b in blocks] == ["Basis"] + [f"NeuROK_{f:04d}" for f in range(1, 21)]
    curves = list(_fcurves(obj))
    assert len(curves) == 20
    middle = next(c for c in curves if c.data_path == 'key_blocks["NeuROK_0010"].value')
    assert [tuple(k.co) for k in middle.keyframe_points] == [(9.0, 0.0), (10.0, 1.0), (11.0, 0.0)]
    assert {k.interpolation for c in curves for k in c.keyframe_points} == {"LINEAR"}

    rest = evaluated_vertices(obj, 1)
    verts = np.array([tuple(v.co) for v in obj.data.vertices]) + (0.0, 0.0, 2.0)
    triangles = _triangles(obj)
    expected = simulate(verts, triangles, Conditions(frames=20, fps=24, gravity=(0, 0, -9.81), ground_height=0.0,
                                                     velocity=(1, 0, 2), angular_velocity=(0, 3, 1))).positions
    np.testing.assert_allclose(rest, verts, atol=1e-5)
    for frame in (5, 13, 20):
        np.testing.assert_allclose(evaluated_vertices(obj, frame), expected[frame - 1], atol=1e-4)
    halfway = evaluated_vertices(obj, 12.5)  # sub-frames blend neighbours: motion blur works
    np.testing.assert_allclose(halfway, 0.5 * (expected[11] + expected[12]), atol=1e-4)
    np.testing.assert_allclose(evaluated_vertices(obj, 30), expected[-1], atol=1e-4)  # last frame holds


def test_existing_shape_keys_and_animation_survive_simulate_and_clear():
    obj = add_box(location=(0.0, 0.0, 3.0))
    obj.shape_key_add(name="Basis")
    smile = obj.shape_key_add(name="Smile")
    smile.data[0].co = (2.0, 2.0, 2.0)
    smile.value = 0.0
    smile.keyframe_insert("value", frame=1)
    action = obj.data.shape_keys.animation_data.action
    obj.neurok.frame_end = 8
    for _ in range(2):  # a second Simulate replaces the first bake
        assert bpy.ops.neurok.simulate() == {"FINISHED"}
        assert len(obj.data.shape_keys.key_blocks) == 2 + 8
        assert obj.data.shape_keys.animation_data.action == action
    assert bpy.ops.neurok.clear() == {"FINISHED"}
    assert [b.name for b in obj.data.shape_keys.key_blocks] == ["Basis", "Smile"]
    assert [c.data_path for c in _fcurves(obj)] == ['key_blocks["Smile"].value']
    assert tuple(obj.data.shape_keys.key_blocks["Smile"].data[0].co) == (2.0, 2.0, 2.0)


def test_clear_removes_what_simulate_made_and_undo_restores():
    obj = add_box(location=(0.0, 0.0, 1.0))
    obj.neurok.frame_end = 6
    bpy.ops.ed.undo_push(message="before")
    assert bpy.ops.neurok.simulate("EXEC_DEFAULT", True) == {"FINISHED"}  # undo=True: as a button does
    assert obj.data.shape_keys is not None and len(bpy.data.actions) == 1
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Box"]
    assert obj.data.shape_keys is None and not obj.neurok.is_baked
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert bpy.ops.neurok.clear() == {"FINISHED"}
    assert obj.data.shape_keys is None and len(bpy.data.actions) == 0 and not obj.neurok.is_baked


def test_clear_is_one_undo_step():
    obj = add_box(location=(0.0, 0.0, 1.0))
    obj.neurok.frame_end = 5
    bpy.ops.ed.undo_push(message="before")  # background mode starts its undo system on the first push
    assert bpy.ops.neurok.simulate("EXEC_DEFAULT", True) == {"FINISHED"}
    assert bpy.ops.neurok.clear("EXEC_DEFAULT", True) == {"FINISHED"}
    assert bpy.data.objects["Box"].data.shape_keys is None
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Box"]
    assert len(obj.data.shape_keys.key_blocks) == 6 and obj.neurok.is_baked


def test_simulating_again_from_a_baked_frame_starts_from_the_rest_shape():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 12
    obj.neurok.velocity = (3.0, 0.0, 0.0)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    first = evaluated_vertices(obj, 12)
    bpy.context.scene.frame_set(8)  # the baked pose here is far from the rest shape
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    np.testing.assert_allclose(evaluated_vertices(obj, 12), first, atol=1e-5)
    assert not any(b.mute for b in obj.data.shape_keys.key_blocks)


def test_a_user_key_with_a_baked_name_is_left_alone():
    obj = add_box(location=(0.0, 0.0, 1.0))
    obj.shape_key_add(name="Basis")
    mine = obj.shape_key_add(name="NeuROK_0003")
    mine.data[0].co = (5.0, 5.0, 5.0)
    obj.neurok.frame_end = 5
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    paths = {c.data_path for c in _fcurves(obj)}
    assert 'key_blocks["NeuROK_0003.001"].value' in paths and 'key_blocks["NeuROK_0003"].value' not in paths
    assert bpy.ops.neurok.clear() == {"FINISHED"}
    assert [b.name for b in obj.data.shape_keys.key_blocks] == ["Basis", "NeuROK_0003"]
    assert tuple(obj.data.shape_keys.key_blocks["NeuROK_0003"].data[0].co) == (5.0, 5.0, 5.0)


def test_a_bake_failing_half_way_leaves_nothing_behind(monkeypatch):
    from neurok_blender import bake

    obj = add_box(location=(0.0, 0.0, 1.0))
    obj.neurok.frame_end = 6
    monkeypatch.setattr(bake, "LINEAR", "not an interpolation")  # foreach_set raises on the first curve
    with pytest.raises(RuntimeError):
        bpy.ops.neurok.simulate()
    assert obj.data.shape_keys is None and len(bpy.data.actions) == 0 and not obj.neurok.is_baked


def test_scene_unit_scale_changes_nothing_in_scene_units():
    """Lengths, velocities and gravity are stored in scene units, mass in scene units cubed: the baked
    motion in scene units is the same whatever metres-per-unit the scene uses."""
    results = []
    for scale in (1.0, 0.01):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.context.scene.unit_settings.scale_length = scale
        obj = add_box(location=(0.0, 0.0, 2.0))
        obj.neurok.frame_end = 16
        obj.neurok.velocity = (1.0, 0.0, 1.0)
        obj.neurok.angular_velocity = (0.0, 2.0, 0.0)
        assert bpy.ops.neurok.simulate() == {"FINISHED"}
        results.append(evaluated_vertices(obj, 16))
    np.testing.assert_allclose(results[0], results[1], atol=1e-4)


def test_force_on_a_target_object_changes_momentum_by_its_impulse():
    bpy.context.scene.use_gravity = False
    obj = add_box(location=(0.0, 0.0, 5.0))
    target = bpy.data.objects.new("Push", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.0, 0.0, 5.0)  # the centre of mass: a push without torque
    bpy.context.view_layer.objects.active = obj
    s = obj.neurok
    s.frame_end, s.mass, s.use_ground = 25, 2.0, False
    force = s.forces.add()
    force.vector, force.target, force.frame_start, force.frame_end = (6.0, 0.0, 0.0), target, 1, 13
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    push, total = 12 / 24, 24 / 24
    expected_x = 6.0 / 2.0 * (push**2 / 2 + push * (total - push))
    assert abs(evaluated_vertices(obj, 25).mean(0)[0] - expected_x) < 1e-4
    assert abs(evaluated_vertices(obj, 25).mean(0)[2] - 5.0) < 1e-6


def test_force_on_a_vertex_group_spins_the_body():
    bpy.context.scene.use_gravity = False
    obj = add_box()
    group = obj.vertex_groups.new(name="Top")
    group.add([i for i, v in enumerate(obj.data.vertices) if v.co.z > 0 and v.co.x > 0], 1.0, "REPLACE")
    s = obj.neurok
    s.frame_end, s.use_ground = 10, False
    force = s.forces.add()
    force.vector, force.vertex_group, force.frame_start, force.frame_end = (0.0, 0.0, 10.0), "Top", 1, 5
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    end = evaluated_vertices(obj, 10)
    assert end.mean(0)[2] > 0.1  # pushed up
    assert np.ptp(end[:, 2]) > 1.05  # and tilted: the box's height span grew past its size


def test_modifiers_are_simulated_and_keys_go_on_the_base_mesh():
    obj = add_box(location=(0.0, 0.0, 1.0))
    obj.modifiers.new("Subdivision", "SUBSURF").levels = 2
    obj.neurok.frame_end = 12
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert len(obj.data.shape_keys.key_blocks[-1].data) == 8
    assert len(evaluated_vertices(obj, 12)) > 8


def test_baked_file_plays_back_without_the_addon(tmp_path):
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 10
    obj.neurok.velocity = (2.0, 0.0, 0.0)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    expected = evaluated_vertices(obj, 10)
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    neurok_blender.unregister()
    try:
        bpy.ops.wm.open_mainfile(filepath=path)
        np.testing.assert_allclose(evaluated_vertices(bpy.data.objects["Box"], 10), expected, atol=1e-6)
    finally:
        neurok_blender.register()


def test_start_at_current_frame():
    obj = add_box(location=(0.0, 0.0, 2.0))
    bpy.context.scene.frame_current = 30
    obj.neurok.use_current_frame, obj.neurok.frame_start, obj.neurok.frame_end = True, 1, 40
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert (obj.neurok.bake_frame_start, obj.neurok.bake_frame_end) == (30, 40)
    assert obj.data.shape_keys.key_blocks[1].name == "NeuROK_0030"
    np.testing.assert_allclose(evaluated_vertices(obj, 10), evaluated_vertices(obj, 30), atol=1e-6)  # held before


def test_console_api_matches_the_operator():
    obj = add_box(location=(0.0, 0.0, 1.5))
    obj.neurok.frame_end = 6
    assert "baked 6 frames" in api.simulate_object(obj)
    assert api.clear_object(obj) == "removed 6 baked shape keys"


def test_the_default_is_the_learned_solver_and_it_drops_believably():
    obj = add_box(location=(0.0, 0.0, 3.0), category="auto")
    obj.neurok.frame_end = 12
    assert "as elastic" in api.simulate_object(obj)
    first, last = evaluated_vertices(obj, 1), evaluated_vertices(obj, 12)
    t = 11 / 24  # in the air all along: the centre of mass falls at g, the vertices with it up to the wobble
    assert abs((first[:, 2].mean() - last[:, 2].mean()) - 0.5 * 9.81 * t**2) < 0.05
    assert np.isfinite(last).all() and obj.neurok.is_baked


def test_missing_weights_are_reported_and_change_nothing(monkeypatch, tmp_path):
    from neurok_blender.core import neurok

    monkeypatch.setattr(neurok, "WEIGHTS", tmp_path / "gone.pt")
    job.load_model.cache_clear()
    try:
        add_box(category="auto")
        before = scene_snapshot()
        with pytest.raises(RuntimeError, match="gone.pt"):
            bpy.ops.neurok.simulate()
        assert scene_snapshot() == before
    finally:
        job.load_model.cache_clear()


@pytest.mark.parametrize("case", ["non_mesh", "empty_mesh", "non_finite", "frames", "zero_mass", "shared_mesh",
                                  "missing_force_point", "linked"])
def test_bad_input_is_reported_and_changes_nothing(case, tmp_path):
    obj = _bad_object(case, tmp_path)
    bpy.context.view_layer.objects.active = obj
    before = scene_snapshot()
    with pytest.raises(RuntimeError) as error:  # bpy.ops turns an ERROR report into RuntimeError
        bpy.ops.neurok.simulate()
    message = str(error.value)
    assert message.strip() and "Traceback" not in message
    assert scene_snapshot() == before


def test_no_active_object_is_refused():
    with pytest.raises(RuntimeError, match="No active object"):
        bpy.ops.neurok.simulate()


def _bad_object(case, tmp_path):
    if case == "non_mesh":
        bpy.ops.object.camera_add()
        return bpy.context.active_object
    if case == "empty_mesh":
        obj = bpy.data.objects.new("Empty mesh", bpy.data.meshes.new("nothing"))
        bpy.context.scene.collection.objects.link(obj)
        return obj
    if case == "linked":
        add_box(name="Library box")
        library = str(tmp_path / "library.blend")
        bpy.data.libraries.write(library, {bpy.data.objects["Library box"]})
        bpy.ops.wm.read_factory_settings(use_empty=True)
        with bpy.data.libraries.load(library, link=True) as (source, target):
            target.objects = ["Library box"]
        obj = target.objects[0]
        bpy.context.scene.collection.objects.link(obj)
        return obj
    obj = add_box()
    if case == "non_finite":
        co = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
        obj.data.vertices.foreach_get("co", co)
        co[4] = np.nan
        obj.data.vertices.foreach_set("co", co)
    elif case == "frames":
        obj.neurok.frame_start, obj.neurok.frame_end = 10, 10
    elif case == "zero_mass":
        obj.neurok.mass = 0.0
    elif case == "shared_mesh":
        twin = obj.copy()
        bpy.context.scene.collection.objects.link(twin)
    elif case == "missing_force_point":
        obj.neurok.forces.add().vector = (1.0, 0.0, 0.0)
    return obj


def _fcurves(obj):
    from neurok_blender.bake import _fcurves as fcurves

    key = obj.data.shape_keys
    return fcurves(key, key.animation_data)


def _triangles(obj):
    obj.data.calc_loop_triangles()
    tris = np.zeros(len(obj.data.loop_triangles) * 3, dtype=np.int32)
    obj.data.loop_triangles.foreach_get("vertices", tris)
    return tris.reshape(-1, 3)


def test_the_api_reference_is_in_step_with_the_docstrings():
    from tools.api_reference import OUTPUT, reference

    assert OUTPUT.read_text() == reference(), "docs/api.md is out of step: run python -m tools.api_reference"
