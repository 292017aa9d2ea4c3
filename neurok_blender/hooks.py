"""Pins that follow Hook modifiers: a tablecloth held by two hooked corners, a lamp hung from a hook.

A Hook modifier moves the vertices it holds with its target object. On a body with a Pin group, the
pinned vertices are held where the modifier stack puts them at every frame (their evaluated world
positions, so the object's transform and parent come with them), and the body is simulated from its
evaluated start shape. The bake then holds the whole motion, the hooks' included, so the bake turns
the hooks off (viewport and render): left on, they would move the baked vertices a second time.
Clear turns back on exactly the hooks the bake turned off; a new read sees them on.
"""

from contextlib import contextmanager

import bpy
import numpy as np

from .bake import KEY_PREFIX


def acting(obj) -> list:
    """The object's Hook modifiers that act: shown in the viewport, with a target object."""
    return [m for m in obj.modifiers if m.type == "HOOK" and m.show_viewport and m.object is not None]


@contextmanager
def as_before_bake(obj):
    """Inside, the object evaluates as it did before the last bake: its baked shape keys muted and
    the hooks that bake turned off shown (the depsgraph updated on the way in and out)."""
    key = obj.data.shape_keys
    ours = [b for b in (key.key_blocks if key else []) if b.name.startswith(KEY_PREFIX)]
    off = [obj.modifiers[n] for n in _names(obj) if n in obj.modifiers]
    was = [b.mute for b in ours], [(m.show_viewport, m.show_render) for m in off]
    try:
        for b in ours:
            b.mute = True
        for m in off:
            m.show_viewport = m.show_render = True
        bpy.context.evaluated_depsgraph_get().update()
        yield
    finally:
        for b, muted in zip(ours, was[0]):
            b.mute = muted
        for m, (viewport, render) in zip(off, was[1]):
            m.show_viewport, m.show_render = viewport, render
        bpy.context.evaluated_depsgraph_get().update()


def pinned_path(obj, scene, depsgraph, start: int, end: int, pins) -> np.ndarray:
    """(F, N, 3) world positions (scene units) of the vertices ``pins`` of the evaluated mesh at each
    frame from ``start`` to ``end``; call it inside ``as_before_bake``. Leaves the scene at its frame."""
    current, subframe = scene.frame_current, scene.frame_subframe
    path = []
    try:
        for frame in range(start, end + 1):
            scene.frame_set(frame)
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            try:
                local = np.array([tuple(mesh.vertices[i].co) for i in pins], dtype=np.float64).reshape(-1, 3)
            finally:
                evaluated.to_mesh_clear()
            world = np.array(evaluated.matrix_world, dtype=np.float64)
            path.append(local @ world[:3, :3].T + world[:3, 3])
    finally:
        scene.frame_set(current, subframe=subframe)
    return np.stack(path)


def turn_off(obj) -> str:
    """After a bake that holds the hooks' motion: turn them off, remembered for ``turn_on``; says so."""
    held = acting(obj)
    for m in held:
        m.show_viewport = m.show_render = False
    obj.neurok.baked_hooks = "\n".join(m.name for m in held)
    names = ", ".join(f"'{m.name}'" for m in held)
    return f"the pins followed {names}, now off: the bake holds their motion (Clear turns them back on)"


def turn_on(obj) -> int:
    """Turn back on the hooks the last bake turned off; how many."""
    names = [n for n in _names(obj) if n in obj.modifiers]
    for n in names:
        obj.modifiers[n].show_viewport = obj.modifiers[n].show_render = True
    obj.neurok.baked_hooks = ""
    return len(names)


def _names(obj) -> list[str]:
    return [n for n in obj.neurok.baked_hooks.split("\n") if n]
