"""Plain functions behind every button: the sidebar, ``bpy.ops.neurok.*``, the console and batch jobs.

    import neurok_blender.api as neurok           # or bl_ext.user_default.neurok.api once installed
    neurok.simulate_object(bpy.data.objects["Cube"])
    neurok.clear_object(bpy.data.objects["Cube"])
"""

import functools
import time
from typing import Callable

import bpy
import numpy as np

from .bake import bake_shape_keys, clear_bake
from .scene_io import check_target, frame_range, read_rest_mesh, transform, unit_scale, vertex_group_indices


def simulate_object(obj, progress: Callable[[int, int], bool | None] | None = None) -> str:
    """Simulate ``obj`` in the current scene with its ``obj.neurok`` settings; bake the motion as shape keys.

    The object is read as it is now (current frame, modifiers applied). Everything is checked and
    simulated before the object is touched, so a bad input or a failed rollout leaves the scene
    exactly as it was. Returns a one-line summary.
    """
    scene = bpy.context.scene
    check_target(obj)
    start, end = frame_range(obj, scene)
    settings = obj.neurok
    if not settings.mass > 0:
        raise ValueError(f"mass must be positive, got {settings.mass} kg")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    vertices, triangles, base, world = read_rest_mesh(obj, depsgraph)
    scale = unit_scale(scene)  # Blender stores unit-bearing values in scene units: metres = units * scale

    from .core import Conditions, simulate  # torch loads on first use, not at Blender start-up

    conditions = Conditions(
        frames=end - start + 1,
        fps=scene.render.fps / scene.render.fps_base,
        gravity=tuple(np.array(scene.gravity) * scale) if scene.use_gravity else (0.0, 0.0, 0.0),
        ground_height=settings.ground_height * scale if settings.use_ground else None,
        velocity=tuple(np.array(settings.velocity) * scale),
        angular_velocity=tuple(settings.angular_velocity),
        forces=[_force(obj, f, start, base, scale) for f in settings.forces],
        mass=settings.mass * scale**3,
        friction=settings.friction,
        restitution=settings.restitution,
        drag=settings.drag,
        category=settings.category,
        stiffness=settings.stiffness,
        damping=settings.damping,
        integrator=settings.integrator,
        substeps=settings.substeps or None,
    )
    began = time.perf_counter()
    solve = simulate if settings.category == "rigid" else shipped_model().simulate
    result = solve(vertices * scale, triangles, conditions, progress=progress, points=base * scale)
    local = transform(result.positions.astype(np.float64) / scale, np.linalg.inv(world))
    clear_bake(obj)
    bake_shape_keys(obj, local, start)  # removes what it made if it fails half-way
    return (f"NeuROK: baked {conditions.frames} frames ({start}-{end}) of '{obj.name}' as "
            f"{result.info['category']} in {time.perf_counter() - began:.1f} s")


@functools.cache
def shipped_model():
    """The weights inside the add-on, loaded once per Blender session (ValueError naming the file
    if they are missing or broken)."""
    from .core import NeuROK

    return NeuROK.load()


def clear_object(obj) -> int:
    """Remove the shape keys and F-curves the last bake made; returns how many keys went."""
    if obj is None or obj.type != "MESH":
        raise ValueError("select the baked mesh object to clear")
    return clear_bake(obj)


def _force(obj, force, start, base, scale):
    from .core import Force

    window = dict(start_frame=force.frame_start - start, end_frame=force.frame_end - start)
    if force.target is not None:
        return Force(tuple(force.vector), point=tuple(np.asarray(force.target.matrix_world.translation) * scale), **window)
    if force.vertex_group:
        return Force(tuple(force.vector), point=base[vertex_group_indices(obj, force.vertex_group)] * scale, **window)
    raise ValueError("each force needs a target object or a vertex group")
