"""The artist's tool through real bpy: background solves, cancel and faults, point caches, exports,
animated settings, pull and release."""

import json
import struct
import threading

import bpy
import numpy as np
import pytest

from neurok_blender import api, job
from neurok_blender.core import SimulationCancelled
from neurok_blender.point_cache import read_pc2, write_pc2
from neurok_blender.scene_io import animation_curves
from conftest import add_box, evaluated_vertices, scene_snapshot


@pytest.fixture(autouse=True)
def no_solve_left_running():
    yield
    if job.running() is not None:
        job.running().cancel()
        job.running().wait(30)


def held_job(obj):
    """A job whose solve keeps reporting frame 1 until it is cancelled: a long simulation on demand."""
    work = job.SimulationJob.read(obj)
    started = threading.Event()

    def solve(progress=None):
        started.set()
        while progress(1, work.frames - 1):
            threading.Event().wait(0.01)
        raise SimulationCancelled("cancelled")

    work.solve = solve
    return work, started


def test_a_background_solve_bakes_what_the_inline_one_does():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end, obj.neurok.velocity = 24, (1.0, 0.0, 0.0)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    inline = evaluated_vertices(obj, 24)

    solve = job.start(job.SimulationJob.read(obj))
    assert solve.wait(60)
    assert (solve.done, solve.total) == (23, 23)
    assert "baked 24 frames" in solve.job.bake(solve.outcome())
    np.testing.assert_allclose(evaluated_vertices(obj, 24), inline, atol=1e-6)
    assert job.running() is None


def test_cancel_stops_the_solve_and_changes_nothing():
    obj = add_box(location=(0.0, 0.0, 2.0))
    work, started = held_job(obj)
    before = scene_snapshot()
    solve = job.start(work)
    assert started.wait(10) and job.running() is solve
    solve.cancel()
    assert solve.wait(10)
    with pytest.raises(SimulationCancelled):
        solve.outcome()
    assert scene_snapshot() == before and job.running() is None


def test_a_second_simulate_while_one_runs_is_refused():
    obj = add_box(location=(0.0, 0.0, 2.0))
    work, started = held_job(obj)
    job.start(work)
    assert started.wait(10)
    with pytest.raises(ValueError, match="still simulating 'Box'"):
        job.start(job.SimulationJob.read(obj))
    with pytest.raises(RuntimeError, match="Simulating 'Box'"):  # the button is greyed out with the reason
        bpy.ops.neurok.simulate()


def test_an_object_deleted_while_it_simulates_is_not_baked_and_a_renamed_one_is():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 6
    work = job.SimulationJob.read(obj)
    result = work.solve()
    obj.name = "Renamed"
    assert "of 'Renamed'" in work.bake(result)

    work = job.SimulationJob.read(obj)
    result = work.solve()
    bpy.data.objects.remove(obj)
    with pytest.raises(ValueError, match="was deleted or its mesh changed"):
        work.bake(result)


def test_a_mesh_edited_while_it_simulates_is_not_baked():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 6
    work = job.SimulationJob.read(obj)
    result = work.solve()
    obj.data.vertices.add(1)
    with pytest.raises(ValueError, match="was deleted or its mesh changed"):
        work.bake(result)
    assert obj.data.shape_keys is None


def test_loading_a_file_cancels_a_running_solve(tmp_path):
    path = str(tmp_path / "other.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    work, started = held_job(add_box(location=(0.0, 0.0, 2.0)))
    solve = job.start(work)
    assert started.wait(10)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert solve.wait(10)
    with pytest.raises(SimulationCancelled):
        solve.outcome()


def test_point_cache_plays_the_same_motion_as_shape_keys_and_clears():
    obj = add_box(location=(0.0, 0.0, 2.0))
    s = obj.neurok
    s.frame_start, s.frame_end, s.angular_velocity = 3, 20, (0.0, 3.0, 1.0)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    keyed = {frame: evaluated_vertices(obj, frame) for frame in (1, 3, 11, 11.5, 20, 30)}

    s.output = "POINT_CACHE"
    assert bpy.ops.neurok.simulate() == {"FINISHED"}  # replaces the shape keys by the cache
    assert obj.data.shape_keys is None and obj.modifiers[0].type == "MESH_CACHE"
    assert read_pc2(s.bake_cache_file).shape == (18, 8, 3)
    for frame, expected in keyed.items():
        np.testing.assert_allclose(evaluated_vertices(obj, frame), expected, atol=1e-5)
    assert bpy.ops.neurok.clear() == {"FINISHED"}
    assert len(obj.modifiers) == 0 and not s.is_baked


def test_pc2_round_trip_and_truncation(tmp_path):
    positions = np.random.default_rng(0).normal(size=(5, 7, 3)).astype(np.float32)
    path = tmp_path / "a.pc2"
    write_pc2(path, positions)
    assert path.stat().st_size == 32 + positions.nbytes
    np.testing.assert_array_equal(read_pc2(path), positions)
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ValueError, match="truncated"):
        read_pc2(path)


def test_gltf_export_has_a_morph_target_and_a_weight_key_per_frame(tmp_path):
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 12
    other = add_box(name="Other", location=(3.0, 0.0, 0.0))
    other.select_set(False)  # selected, it would be simulated with the box
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    other.select_set(True)
    obj.select_set(False)
    path = api.export_object(obj, str(tmp_path / "box.glb"))
    data = open(path, "rb").read()
    length = struct.unpack("<I", data[12:16])[0]
    gltf = json.loads(data[20:20 + length])
    assert [m["name"] for m in gltf["nodes"]] == ["Box"]  # the selection was not exported
    assert len(gltf["meshes"][0]["primitives"][0]["targets"]) == 12
    (sampler,) = gltf["animations"][0]["samplers"]
    assert gltf["accessors"][sampler["input"]]["count"] == 12
    assert other.select_get() and not obj.select_get() and bpy.context.view_layer.objects.active == obj  # restored


def test_alembic_export_has_every_frame(tmp_path):
    obj = add_box(location=(0.0, 0.0, 2.0))
    s = obj.neurok
    s.frame_start, s.frame_end, s.angular_velocity = 1, 10, (0.0, 4.0, 0.0)
    s.output = "POINT_CACHE"  # Alembic takes either bake
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    baked = [evaluated_vertices(obj, frame) for frame in range(1, 11)]
    path = api.export_object(obj, str(tmp_path / "box.abc"))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.alembic_import(filepath=path)
    imported = bpy.context.scene.objects[0]
    for frame in range(1, 11):
        np.testing.assert_allclose(evaluated_vertices(imported, frame), baked[frame - 1], atol=1e-5)


def test_exports_refuse_what_they_cannot_write(tmp_path):
    obj = add_box()
    with pytest.raises(ValueError, match="click Simulate first"):
        api.export_object(obj, str(tmp_path / "a.glb"))
    obj.neurok.frame_end, obj.neurok.output = 4, "POINT_CACHE"
    api.simulate_object(obj)
    with pytest.raises(ValueError, match="not point caches"):
        api.export_object(obj, str(tmp_path / "a.glb"))
    with pytest.raises(ValueError, match="use one of .glb, .gltf, .abc"):
        api.export_object(obj, str(tmp_path / "a.fbx"))


def test_a_keyframed_force_acts_frame_by_frame():
    """A ramp from 0 to 12 N over frames 1-13 on 2 kg gives the impulse of its mean, 6 N for 0.5 s."""
    bpy.context.scene.use_gravity = False
    obj = add_box(location=(0.0, 0.0, 5.0))
    target = bpy.data.objects.new("Push", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.0, 0.0, 5.0)
    bpy.context.view_layer.objects.active = obj
    s = obj.neurok
    s.frame_end, s.mass, s.use_ground = 25, 2.0, False
    force = s.forces.add()
    force.target, force.frame_start, force.frame_end = target, 1, 13
    for frame, push in ((1, 0.0), (13, 12.0)):
        force.vector = (push, 0.0, 0.0)
        obj.keyframe_insert('neurok.forces[0].vector', frame=frame)
    for curve in animation_curves(obj).values():
        for key in curve.keyframe_points:
            key.interpolation = "LINEAR"
    bpy.context.scene.frame_set(25)  # the settings' current value is the last key: only the curve is right
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    speed = (evaluated_vertices(obj, 25).mean(0)[0] - evaluated_vertices(obj, 24).mean(0)[0]) * 24
    assert abs(speed - 6.0 * 0.5 / 2.0) < 1e-3


def test_a_keyframed_velocity_is_read_at_the_start_frame():
    bpy.context.scene.use_gravity = False
    obj = add_box()
    s = obj.neurok
    s.frame_start, s.frame_end, s.use_ground = 10, 34, False
    for frame, vx in ((1, 0.0), (10, 2.0), (20, 8.0)):
        s.velocity = (vx, 0.0, 0.0)
        obj.keyframe_insert("neurok.velocity", frame=frame)
    bpy.context.scene.frame_set(1)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    moved = evaluated_vertices(obj, 34).mean(0)[0] - evaluated_vertices(obj, 10).mean(0)[0]
    assert abs(moved - 2.0) < 1e-4  # 2 m/s for one second


def test_pull_and_release_starts_from_the_pulled_shape():
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 1.0))
    obj = bpy.context.active_object
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide(number_cuts=3)
    bpy.ops.object.mode_set(mode="OBJECT")
    top = [v.index for v in obj.data.vertices if v.co.z > 0.19]
    obj.vertex_groups.new(name="Top").add(top, 1.0, "REPLACE")
    s = obj.neurok
    s.frame_end, s.use_pull, s.pull_vertex_group, s.pull_offset = 6, True, "Top", (0.0, 0.0, 0.04)
    bpy.context.scene.use_gravity = False
    assert "as elastic" in api.simulate_object(obj)
    rest = np.array([tuple(v.co) for v in obj.data.vertices]) + (0.0, 0.0, 1.0)
    first = evaluated_vertices(obj, 1)
    lift = (first[top] - rest[top])[:, 2].mean() - (first - rest)[:, 2].mean()
    assert 0.01 < lift < 0.06  # the handle starts raised relative to the body (up to the learned space)


def test_pull_needs_a_handle():
    obj = add_box(category="auto")
    obj.neurok.use_pull = True
    with pytest.raises(RuntimeError, match="needs a handle"):
        bpy.ops.neurok.simulate()


def test_a_pin_group_holds_its_vertices_where_they_are():
    obj = add_box(location=(0.0, 0.0, 2.0))
    corner = [v.index for v in obj.data.vertices if tuple(v.co) == (-0.5, -0.5, 0.5)]
    obj.vertex_groups.new(name="Hook").add(corner, 1.0, "REPLACE")
    obj.neurok.frame_end, obj.neurok.pin_group = 24, "Hook"
    start = evaluated_vertices(obj, 1)
    assert "baked 24 frames" in api.simulate_object(obj)
    hung = evaluated_vertices(obj, 24)
    assert np.abs(hung[corner] - start[corner]).max() < 1e-3  # held, where a free box falls 2.6 m
    assert np.linalg.norm(hung - start, axis=1).max() > 0.3  # and swings about it
    obj.neurok.pin_group = "Nothing"
    with pytest.raises(ValueError, match="Nothing"):
        api.simulate_object(obj)


def test_pins_follow_a_hook_and_the_bake_turns_it_off_until_clear():
    obj = add_box(location=(0.0, 0.0, 2.0))
    corner = [v.index for v in obj.data.vertices if tuple(v.co) == (-0.5, -0.5, 0.5)]
    obj.vertex_groups.new(name="Pin").add(corner, 1.0, "REPLACE")
    obj.neurok.frame_end, obj.neurok.pin_group = 24, "Pin"
    hand = bpy.data.objects.new("Hand", None)
    bpy.context.scene.collection.objects.link(hand)
    hand.location = (-0.5, -0.5, 2.5)
    bpy.context.view_layer.update()
    hook = obj.modifiers.new("Hook", "HOOK")
    hook.object, hook.vertex_group = hand, "Pin"
    hook.matrix_inverse = hand.matrix_world.inverted() @ obj.matrix_world  # the hook holds them where they are
    hand.keyframe_insert("location", frame=1)
    hand.location = (0.5, -0.5, 3.0)  # a metre sideways and half up over the second
    hand.keyframe_insert("location", frame=24)
    start = evaluated_vertices(obj, 1)

    def hand_at(frame):
        bpy.context.scene.frame_set(frame)
        return np.array(hand.matrix_world.translation)

    assert np.abs(start[corner[0]] - hand_at(1)).max() < 1e-6
    for attempt in range(2):  # again on top of the first bake, which turned the hook off
        summary = api.simulate_object(obj)
        assert "'Hook', now off" in summary and not hook.show_viewport and not hook.show_render
        for frame in (12, 24):  # shown once, where the hand is: not moved by the hook a second time
            shown = evaluated_vertices(obj, frame)
            assert np.linalg.norm(shown[corner[0]] - hand_at(frame)) < 5e-3
        assert np.linalg.norm(shown - start, axis=1).max() > 1.2  # carried off and swinging from it
    assert "turned 1 hook modifier back on" in api.clear_object(obj)
    assert hook.show_viewport and hook.show_render and obj.neurok.baked_hooks == ""
    assert np.abs(evaluated_vertices(obj, 24)[corner[0]] - hand_at(24)).max() < 1e-5  # the hook alone again


def test_arrow_handles_edit_the_vectors_at_the_arrow_scale_and_undo_per_change():
    from neurok_blender.gizmos import VIEW3D_GGT_neurok, arrow_origins, gizmos_shown
    from neurok_blender.properties import VELOCITY_ARROW_TIME

    obj = add_box(location=(0.0, 0.0, 2.0))  # a 1 m box: its diagonal is sqrt(3) m; 1 kg weighs 9.81 N
    target = bpy.data.objects.new("Push", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (1.0, 0.0, 2.0)
    force = obj.neurok.forces.add()
    force.vector, force.target = (9.81, 0.0, 0.0), target
    assert np.allclose(force.handle, (np.sqrt(3.0), 0.0, 0.0), atol=1e-5)  # one body weight: one diagonal
    force.handle = (0.0, 0.0, np.sqrt(3.0) / 2)  # a drag on the tip
    assert np.allclose(force.vector, (0.0, 0.0, 9.81 / 2), atol=1e-4)
    obj.neurok.velocity_handle = (0.5, 0.0, 0.0)
    assert np.allclose(obj.neurok.velocity, (0.5 / VELOCITY_ARROW_TIME, 0.0, 0.0))

    bpy.context.view_layer.update()  # matrix_world follows the new location
    origins = arrow_origins(obj)
    assert [name for _, name, _ in origins] == ["velocity_handle", "handle"]
    assert np.allclose(origins[0][2], (0.0, 0.0, 2.0)) and np.allclose(origins[1][2], (1.0, 0.0, 2.0))
    assert gizmos_shown(bpy.context) and "bl_rna" in VIEW3D_GGT_neurok.__dict__  # registered
    obj.neurok.show_gizmos = False
    assert not gizmos_shown(bpy.context)

    bpy.ops.ed.undo_push(message="before the drag")
    force.handle = (0.0, 0.0, 1.0)
    bpy.ops.ed.undo_push(message="drag")
    bpy.ops.ed.undo()
    assert np.allclose(bpy.data.objects["Box"].neurok.forces[0].vector, (0.0, 0.0, 9.81 / 2), atol=1e-4)


def test_a_shape_key_bake_too_big_for_a_blend_is_refused_before_solving(monkeypatch):
    monkeypatch.setattr(job, "MAX_SHAPE_KEY_BYTES", 8 * 12 * 50)  # 8 vertices for 50 frames
    obj = add_box()
    obj.neurok.frame_end = 60
    with pytest.raises(RuntimeError, match="Point Cache"):
        bpy.ops.neurok.simulate()
    obj.neurok.output = "POINT_CACHE"
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
