"""The scene's obstacles: mesh objects with Blender's Collision modifier, read as core.Collider.

The convention Cloth and Soft Body use: a mesh with a Collision modifier (Physics > Collision) is an
obstacle, its evaluated triangles in world space; one that moves or deforms (keyframes, drivers,
constraints, parents, or modifiers under the Collision one) is read at every frame of the bake. Its
Outer thickness is the surface's offset from the triangles, and its Cloth "Friction" (0-80) is read
as Blender's Cloth reads it, a Coulomb coefficient of friction / 100.
"""

import bpy
import numpy as np

from .handoff import animated
from .scene_io import check_transform, transform

FRICTION_SCALE = 0.01  # Blender's Cloth collision: Coulomb coefficient = Friction * 0.01


def collider_objects(scene, target, exclude=()) -> list:
    """The visible mesh objects of the scene with a Collision modifier turned on, ``target`` and the
    bodies simulated with it (``exclude``) aside."""
    return [ob for ob in scene.objects if ob is not target and ob not in exclude and ob.type == "MESH"
            and ob.visible_get() and any(m.type == "COLLISION" for m in ob.modifiers)
            and ob.collision is not None and ob.collision.use]


def read_colliders(target, scene, start: int, end: int, scale: float, exclude=()) -> list:
    """core.Collider of each obstacle of ``target``'s scene, in metres, over frames [start, end] (one
    position set for a still obstacle, one per frame for a moving one), the bodies in ``exclude``
    aside. Leaves the scene at the frame it found it."""
    from .core import Collider  # torch loads with the solver, not with Blender

    objects = collider_objects(scene, target, exclude)
    moving = [ob for ob in objects if _moves(ob)]
    reads = {ob.name: [] for ob in objects}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for ob in objects:
        if ob not in moving:
            reads[ob.name].append(_evaluated(ob, depsgraph))
    if moving:
        current, subframe = scene.frame_current, scene.frame_subframe
        try:
            for frame in range(start, end + 1):
                scene.frame_set(frame)
                depsgraph = bpy.context.evaluated_depsgraph_get()
                for ob in moving:
                    reads[ob.name].append(_evaluated(ob, depsgraph))
        finally:
            scene.frame_set(current, subframe=subframe)
    colliders = []
    for ob in objects:
        frames = reads[ob.name]
        if any(len(vertices) != len(frames[0][0]) for vertices, _ in frames):
            raise ValueError(f"collider '{ob.name}' changes its vertex count between frames; "
                             "a collider must keep its topology (apply the modifier that changes it)")
        if not len(frames[0][1]):
            continue  # no faces: nothing to collide with
        vertices = np.stack([v for v, _ in frames]) * scale
        colliders.append(Collider(vertices if len(frames) > 1 else vertices[0], frames[0][1],
                                  friction=ob.collision.cloth_friction * FRICTION_SCALE,
                                  thickness=ob.collision.thickness_outer * scale, name=ob.name))
    return colliders


def _moves(ob) -> bool:
    """Whether it may move or deform with the frame: animated (handoff.animated) or deformed by
    modifiers before its Collision modifier."""
    if animated(ob):
        return True
    for modifier in ob.modifiers:
        if modifier.type == "COLLISION":
            return False
        if modifier.show_viewport:
            return True
    return False


def _evaluated(ob, depsgraph):
    """World-space vertices (V, 3) and triangles (T, 3) of the evaluated mesh."""
    evaluated = ob.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        tris = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        evaluated.to_mesh_clear()
    world = np.array(evaluated.matrix_world, dtype=np.float64)
    check_transform(ob.name, world)
    return transform(co.reshape(-1, 3).astype(np.float64), world), tris.reshape(-1, 3).astype(np.int64)
