import os
import sys

import bpy
import numpy as np
import pytest

import neurok_blender

_exit_status = 0


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


def pytest_unconfigure(config):
    """The bpy 4.2 module segfaults while Python shuts down once a property with Python get/set or
    update callbacks was registered (a PropertyGroup with one such property and nothing else does
    it; bpy 5.0 does not; an add-on enabled through addon_utils does not). End the process here,
    after pytest has reported, with pytest's own status."""
    if bpy.app.version[:2] == (4, 2):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)


@pytest.fixture(scope="session", autouse=True)
def addon():
    neurok_blender.register()
    yield
    neurok_blender.unregister()


@pytest.fixture(autouse=True)
def empty_scene():
    """Every test starts from an empty factory scene."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield


def add_box(name="Box", size=1.0, location=(0.0, 0.0, 0.0), category="rigid"):
    """A single-user cube mesh object, active and selected. Rigid unless asked: the baking tests
    compare against the rigid solver's exact motion; the neural path has tests of its own."""
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.active_object
    obj.name = name
    obj.neurok.category = category
    return obj


def evaluated_vertices(obj, frame):
    """World-space vertex positions that Blender shows at ``frame`` (sub-frames allowed)."""
    scene = bpy.context.scene
    scene.frame_set(int(frame), subframe=frame - int(frame))
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    evaluated.to_mesh_clear()
    world = np.array(evaluated.matrix_world)
    return co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]


def scene_snapshot():
    """What a failed Simulate must not change: shape keys, actions, modifiers and every vertex."""
    state = [len(bpy.data.actions), len(bpy.data.shape_keys)]
    for obj in bpy.data.objects:
        if obj.type == "MESH":
            co = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
            obj.data.vertices.foreach_get("co", co)
            state.append((obj.name, co.tobytes(), obj.data.shape_keys is not None, len(obj.modifiers),
                          obj.neurok.is_baked))
    return state
