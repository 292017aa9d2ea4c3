"""What a new user meets in the first minutes: the default cube, auto's choice, an animated object,
its own shape keys, odd transforms, large bakes, the cache on disk, the command line's flags."""

import math
import os

import bpy
import numpy as np
import pytest
import torch

from neurok_blender import api, cli, estimate
from neurok_blender.preferences import SolverOptions
from neurok_blender.scene_io import read_conditions
from conftest import add_box, evaluated_vertices, scene_snapshot


def test_the_default_cube_half_in_the_ground_is_lifted_onto_it_and_stays():
    bpy.ops.mesh.primitive_cube_add()  # Blender's default: size 2 at the origin, its lower half below z = 0
    obj = bpy.context.active_object
    obj.neurok.frame_end = 12  # launched, it would be 50 m up by then
    summary = api.simulate_object(obj)
    assert "started 1 m inside the ground, so it was lifted onto it" in summary
    first, last = evaluated_vertices(obj, 1), evaluated_vertices(obj, 12)
    assert abs(first[:, 2].min()) < 1e-4  # frame 1 shows it on the ground
    assert abs(last.mean(0)[2] - 1.0) < 0.02 and np.abs(last.mean(0)[:2]).max() < 0.02  # and there it stays


def test_a_symmetric_body_dropped_flat_lands_without_drifting_or_turning():
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 1.5))  # auto: an elastic solid
    obj = bpy.context.active_object
    obj.neurok.frame_end = 24  # it lands at frame 11 and bounces once
    assert "as elastic" in api.simulate_object(obj)
    first = evaluated_vertices(obj, 1)
    for frame in (12, 18, 24):
        now = evaluated_vertices(obj, frame)
        assert np.abs(now.mean(0)[:2] - first.mean(0)[:2]).max() <= 0.005
        u, _, vt = np.linalg.svd((now - now.mean(0)).T @ (first - first.mean(0)))  # best rotation (Kabsch)
        turned = np.degrees(np.arccos(np.clip((np.trace(u @ vt) - 1) / 2, -1.0, 1.0)))
        assert turned <= 0.5


def test_auto_takes_suzanne_and_a_fine_sphere_for_solids_and_a_grid_for_cloth_and_says_why():
    cases = [(bpy.ops.mesh.primitive_monkey_add, {}, "elastic"),
             (bpy.ops.mesh.primitive_uv_sphere_add, {"segments": 64, "ring_count": 32}, "elastic"),
             (bpy.ops.mesh.primitive_grid_add, {"x_subdivisions": 8, "y_subdivisions": 8}, "cloth")]
    for add, options, expected in cases:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        add(location=(0.0, 0.0, 3.0), **options)
        obj = bpy.context.active_object
        obj.neurok.frame_end = 2
        summary = api.simulate_object(obj)
        assert f"as {expected}" in summary and f"auto chose {expected}:" in summary, summary


def test_keyframed_motion_hands_over_its_velocity_and_the_bake_follows_the_keyframes():
    scene = bpy.context.scene
    scene.use_gravity = False
    obj = add_box(location=(0.0, 0.0, 2.0))
    for frame, x in ((1, 0.0), (25, 1.0)):  # 1 m in 24 frames: 1 m/s along x, linear
        obj.location.x = x
        obj.keyframe_insert("location", index=0, frame=frame)
    _linear(obj)
    obj.neurok.use_ground = False
    obj.neurok.frame_start, obj.neurok.frame_end = 5, 17
    summary = api.simulate_object(obj)
    assert "its animation hands over at frame 5" in summary
    start = evaluated_vertices(obj, 5)
    np.testing.assert_allclose(start.mean(0), (4 / 24, 0.0, 2.0), atol=1e-6)  # where the keys had it
    for frame in (9, 17):  # it keeps the 1 m/s it had, once, not the keys' motion plus its own
        np.testing.assert_allclose(evaluated_vertices(obj, frame), start + ((frame - 5) / 24, 0, 0), atol=1e-4)


def test_own_shape_keys_turn_with_the_body():
    bpy.context.scene.use_gravity = False
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.shape_key_add(name="Basis")
    tall = obj.shape_key_add(name="Tall")
    co = np.array([v.co for v in tall.data])
    co[co[:, 2] > 0, 2] += 1.0  # the top face up by 1: a 1 x 1 x 2 box at influence 1
    tall.data.foreach_set("co", co.astype(np.float32).ravel())
    tall.value = 0.5
    obj.neurok.use_ground = False
    obj.neurok.angular_velocity = (math.pi / 2 * 24 / 12, 0.0, 0.0)  # a quarter turn about x in 12 frames
    obj.neurok.frame_end = 13
    api.simulate_object(obj)
    first, turned = evaluated_vertices(obj, 1), evaluated_vertices(obj, 13)
    assert np.ptp(first, 0) == pytest.approx((1.0, 1.0, 1.5), abs=1e-5)  # the key's half: 1.5 tall
    distances = np.linalg.norm(first[:, None] - first[None], axis=-1)
    np.testing.assert_allclose(np.linalg.norm(turned[:, None] - turned[None], axis=-1), distances, atol=1e-4)
    assert np.ptp(turned, 0) == pytest.approx((1.0, 1.5, 1.0), abs=1e-4)  # lying along y, not sheared


@pytest.mark.parametrize("transform, message", [("scale", "scaled to zero along X"),
                                                ("location", "not a finite number")])
def test_a_degenerate_transform_is_refused_before_solving(transform, message):
    obj = add_box()
    if transform == "scale":
        obj.scale.x = 0.0
    else:
        obj.location.z = math.inf
    before = scene_snapshot()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.neurok.simulate()
    assert scene_snapshot() == before


def test_a_non_mesh_is_named_with_its_article():
    bpy.ops.object.empty_add()
    with pytest.raises(RuntimeError, match="'Empty' is an empty, not a mesh"):
        bpy.ops.neurok.simulate()


def test_a_large_bake_is_announced_with_its_estimate(monkeypatch, capsys):
    monkeypatch.setattr(estimate, "LARGE_SECONDS", 1.0)
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 3
    told = api.estimate_object(obj)
    assert told.large and told.seconds > 1.0 and told.bytes > 0
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert f"a large bake of 'Box': {told}" in capsys.readouterr().out
    assert str(estimate.BakeEstimate(300.0, 3 * 2**30, 8 * 2**30)) == "about 5 min and 3.0 GB of the 8.0 GB free"


def test_clear_deletes_the_point_cache_file_and_undo_writes_it_back():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.neurok.output, obj.neurok.frame_end = "POINT_CACHE", 4
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    path = obj.neurok.bake_cache_file
    content = open(path, "rb").read()
    bpy.ops.ed.undo_push(message="baked")
    assert bpy.ops.neurok.clear("EXEC_DEFAULT", True) == {"FINISHED"}
    assert not os.path.exists(path)
    bpy.ops.ed.undo()
    assert open(path, "rb").read() == content
    assert bpy.data.objects["Box"].modifiers[0].filepath == path


def test_the_solver_uses_one_thread_unless_told(monkeypatch):
    threads = torch.get_num_threads()
    try:
        obj = add_box(location=(0.0, 0.0, 2.0))
        obj.neurok.frame_end = 2
        api.simulate_object(obj)
        assert torch.get_num_threads() == 1
        api.simulate_object(obj, options=SolverOptions(threads=2))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_the_command_line_sets_the_material_flags_fps_and_threads(tmp_path):
    add_box(location=(0.0, 0.0, 2.0))
    source = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    out = tmp_path / "baked.blend"
    threads = torch.get_num_threads()
    try:
        assert cli.main(["simulate", str(source), "--out", str(out), "--frames", "3", "--friction", "0.8",
                         "--bounciness", "0.6", "--drag", "0.2", "--fps", "29.97", "--threads", "2"]) == 0
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    bpy.ops.wm.open_mainfile(filepath=str(out))
    obj, scene = bpy.data.objects["Box"], bpy.context.scene
    vertices = np.array([v.co for v in obj.data.vertices])
    conditions = read_conditions(obj, scene, 1, 3, vertices, 1.0, len(vertices))
    assert (conditions.friction, conditions.restitution, conditions.drag) == pytest.approx((0.8, 0.6, 0.2))
    assert conditions.fps == pytest.approx(29.97)


def test_the_command_line_refuses_a_flag_out_of_range(tmp_path, capsys):
    add_box(location=(0.0, 0.0, 2.0))
    source = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    assert cli.main(["simulate", str(source), "--out", str(tmp_path / "out.blend"), "--bounciness", "1.5"]) == 1
    assert "--bounciness must be in [0, 1], got 1.5" in capsys.readouterr().out


def _linear(obj):
    """Make the object's keyframes linear, on Blender 4.2's actions and 5.0's slotted ones."""
    from neurok_blender.scene_io import animation_curves

    for curve in animation_curves(obj).values():
        for point in curve.keyframe_points:
            point.interpolation = "LINEAR"


@pytest.mark.parametrize("category, bounciness", [("rigid", 0.6), ("elastic", 0.5), ("continuum", 0.5),
                                                  ("articulated", 0.3), ("cloth", 0.5)])
def test_bounciness_is_the_coefficient_of_restitution_and_cloth_does_not_bounce(category, bounciness):
    """Dropped 1 m onto the ground, a body bounces back to Bounciness^2 of it (within 0.05 of the drop)."""
    if category == "cloth":
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=8, size=1.0, location=(0.0, 0.0, 1.0))
    else:
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 1.5))
        if category == "articulated":  # two slabs side by side, one object
            obj = bpy.context.active_object
            obj.scale.x = 0.45
            obj.location.x = -0.275
            bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.275, 0.0, 1.5), scale=(0.45, 1.0, 1.0))
            obj.select_set(True)
            bpy.ops.object.join()
        bpy.ops.object.transform_apply()
    obj = bpy.context.active_object
    obj.neurok.category, obj.neurok.restitution, obj.neurok.frame_end = category, bounciness, 22
    summary = api.simulate_object(obj)
    if category == "articulated":  # apart by 0.1 m, face to face: joined where they come closest
        assert "its parts are joined in 1 place, free to turn there" in summary, summary
    heights = np.array([evaluated_vertices(obj, frame)[:, 2].mean() for frame in range(1, 23)])
    landed = int(np.argmin(heights[:16]))
    rise = heights[landed:].max() - (heights[0] - 1.0)  # over the height at which it first touched
    assert rise == pytest.approx(0.0 if category == "cloth" else bounciness**2, abs=0.05)
