"""Scene objects with Blender's Collision modifier are obstacles (issue 42), through real bpy."""

import bpy
import numpy as np
import pytest

from conftest import add_box, evaluated_vertices
from neurok_blender.colliders import read_colliders


def add_collider(name="Floor", size=4.0, location=(0.0, 0.0, 1.0)):
    bpy.ops.mesh.primitive_plane_add(size=size, location=location)
    plane = bpy.context.active_object
    plane.name = name
    plane.modifiers.new("Collision", "COLLISION")
    return plane


def test_a_box_lands_on_a_collision_plane_at_its_outer_thickness():
    plane = add_collider()
    plane.collision.thickness_outer = 0.05
    obj = add_box(size=0.4, location=(0.0, 0.0, 2.0))
    obj.neurok.use_ground, obj.neurok.frame_end = False, 36
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    bottom = evaluated_vertices(obj, 36)[:, 2].min()
    assert abs(bottom - 1.05) < 2e-3


def test_the_summary_names_the_colliders():
    add_collider("Table top")
    obj = add_box(size=0.4, location=(0.0, 0.0, 2.0))
    obj.neurok.frame_end = 6
    from neurok_blender import api

    summary = api.simulate_object(obj)
    assert "colliders: Table top" in summary


def test_a_keyframed_collider_lifts_the_box_resting_on_it():
    plane = add_collider(location=(0.0, 0.0, 0.0))
    plane.keyframe_insert("location", frame=1)
    plane.location.z = 1.0
    plane.keyframe_insert("location", frame=25)
    obj = add_box(size=0.4, location=(0.0, 0.0, 0.2 + plane.collision.thickness_outer))
    obj.neurok.use_ground, obj.neurok.frame_end = False, 30
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    for frame in (25, 30):
        assert abs(evaluated_vertices(obj, frame)[:, 2].min() - (1.0 + plane.collision.thickness_outer)) < 1e-2


def test_what_is_read_from_the_collision_settings():
    """Friction as Blender's Cloth reads it (Friction / 100), Outer thickness, a still collider read
    once and a moving one at every frame; hidden ones, ones turned off and the body itself left out."""
    still = add_collider("Still")
    still.collision.cloth_friction, still.collision.thickness_outer = 40.0, 0.03
    moving = add_collider("Moving", location=(0.0, 0.0, -1.0))
    moving.keyframe_insert("location", frame=1)
    moving.location.x = 2.0
    moving.keyframe_insert("location", frame=11)
    add_collider("Hidden").hide_set(True)
    add_collider("Off").collision.use = False
    obj = add_box(location=(0.0, 0.0, 3.0))
    obj.modifiers.new("Collision", "COLLISION")
    scene = bpy.context.scene
    scene.frame_set(4)
    colliders = {c.name: c for c in read_colliders(obj, scene, 1, 11, 1.0)}
    assert set(colliders) == {"Still", "Moving"}
    assert colliders["Still"].friction == pytest.approx(0.4)
    assert colliders["Still"].thickness == pytest.approx(0.03)
    assert colliders["Still"].frames().shape == (1, 4, 3)
    path = colliders["Moving"].frames()
    assert path.shape == (11, 4, 3)
    assert np.allclose(path[-1].mean(0) - path[0].mean(0), [2.0, 0.0, 0.0], atol=1e-6)
    assert scene.frame_current == 4  # left where it was


def select(*objects):
    bpy.ops.object.select_all(action="DESELECT")
    for ob in objects:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = objects[0]


def test_selected_bodies_simulate_together_as_one_undo_step():
    """A box dropped onto another: both selected, one Simulate lands the upper on the lower (its top
    plus the bodies' 5 mm gap), bakes both, and one undo takes both bakes back."""
    lower = add_box("Lower", size=0.6, location=(0.0, 0.0, 0.3))
    upper = add_box("Upper", size=0.3, location=(0.0, 0.0, 1.2))
    for ob in (lower, upper):
        ob.neurok.frame_end = 30
    select(upper, lower)
    bpy.ops.ed.undo_push(message="before")
    assert bpy.ops.neurok.simulate("EXEC_DEFAULT", True) == {"FINISHED"}
    upper, lower = bpy.data.objects["Upper"], bpy.data.objects["Lower"]
    assert abs(evaluated_vertices(upper, 30)[:, 2].min() - (0.6 + 0.005)) < 3e-3
    assert abs(evaluated_vertices(lower, 30)[:, 2].min()) < 1e-3  # on the ground, holding it
    bpy.ops.ed.undo()
    assert all(bpy.data.objects[name].data.shape_keys is None for name in ("Upper", "Lower"))


def test_a_selected_collider_is_an_obstacle_not_a_body():
    plane = add_collider()
    obj = add_box(size=0.4, location=(0.0, 0.0, 2.0))
    obj.neurok.use_ground, obj.neurok.frame_end = False, 24
    select(obj, plane)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    assert plane.data.shape_keys is None
    assert abs(evaluated_vertices(obj, 24)[:, 2].min() - (1.0 + plane.collision.thickness_outer)) < 3e-3


def test_bodies_simulated_together_share_a_frame_range():
    first, second = add_box("First", location=(0.0, 0.0, 1.0)), add_box("Second", location=(3.0, 0.0, 1.0))
    first.neurok.frame_end, second.neurok.frame_end = 10, 20
    select(first, second)
    with pytest.raises(RuntimeError, match="'Second' and 'First' differ in frame range"):
        bpy.ops.neurok.simulate()
    assert first.data.shape_keys is None and second.data.shape_keys is None
    from neurok_blender import api

    with pytest.raises(ValueError, match="'Second' and 'First' differ in frame range"):
        api.simulate_together([first, second])


def test_pins_follow_the_objects_animation():
    """A box keyframed 2 m sideways over a second, pinned by its top face: the pinned vertices go
    where the keyframes take them and the rest hangs from them."""
    obj = add_box(size=0.4, location=(0.0, 0.0, 2.0))
    top = obj.vertex_groups.new(name="Top")
    top.add([v.index for v in obj.data.vertices if v.co.z > 0], 1.0, "REPLACE")
    obj.neurok.pin_group, obj.neurok.frame_end = "Top", 30
    obj.keyframe_insert("location", frame=1)
    obj.location.x = 2.0
    obj.keyframe_insert("location", frame=25)
    assert bpy.ops.neurok.simulate() == {"FINISHED"}
    pinned = [v.index for v in obj.data.vertices if v.co.z > 0]
    for frame in (13, 25, 30):
        bpy.context.scene.frame_set(frame)
        expected = np.array([obj.matrix_world @ obj.data.vertices[i].co for i in pinned])  # the keyframes' place
        assert np.abs(evaluated_vertices(obj, frame)[pinned] - expected).max() < 0.01
