"""Reading what the artist sees: the evaluated mesh in world space, and the settings as Conditions."""

import numpy as np



def check_target(obj) -> None:
    """Raise ValueError saying why ``obj`` cannot be simulated; touch nothing."""
    if obj is None:
        raise ValueError("No active object: select a mesh to simulate")
    if obj.type != "MESH":
        kind = obj.type.lower().replace("_", " ")
        raise ValueError(f"'{obj.name}' is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not a mesh")
    if obj.library is not None or obj.data.library is not None:
        raise ValueError(f"'{obj.name}' is linked from a library; make it local to bake shape keys on it")
    if obj.data.users > 1:
        raise ValueError(f"the mesh of '{obj.name}' is shared by {obj.data.users} users; "
                         "make it single-user so the bake does not move the others")
    if obj.mode == "EDIT":
        raise ValueError("leave Edit Mode before simulating")
    if len(obj.data.vertices) == 0:
        raise ValueError(f"'{obj.name}' has no vertices")


FARTHEST = 1e9  # scene units: Blender stores an infinite location as 3.4e38, which float32 frames cannot hold


def check_transform(name: str, world: np.ndarray) -> None:
    """Raise ValueError for a world matrix the solve cannot use: not finite (or beyond FARTHEST), or
    scaled to (near) zero along an axis (its column's length below 1e-9 of the largest; the bake maps
    world positions back to the object through its inverse)."""
    if not (np.isfinite(world).all() and np.abs(world).max() < FARTHEST):
        raise ValueError(f"'{name}' has a location, rotation or scale that is not a finite number "
                         f"(or beyond {FARTHEST:.0e}): fix its transform before simulating")
    scales = np.linalg.norm(world[:3, :3], axis=0)
    flat = [axis for axis, length in zip("XYZ", scales) if not length > 1e-9 * max(scales.max(), 1e-300)]
    if flat:
        scale = ", ".join(f"{s:.3g}" for s in scales)
        raise ValueError(f"'{name}' is scaled to zero along {', '.join(flat)} (scale {scale}): "
                         "give it a non-zero scale before simulating")


def frame_range(obj, scene) -> tuple[int, int]:
    s = obj.neurok
    start = scene.frame_current if s.use_current_frame else s.frame_start
    if s.frame_end <= start:
        raise ValueError(f"the end frame ({s.frame_end}) must come after the start frame ({start})")
    return start, s.frame_end


def read_conditions(obj, scene, start: int, end: int, base: np.ndarray, scale: float, vertex_count: int):
    """``obj.neurok`` as core.Conditions in metres. Animated settings are read where they act: the
    initial velocities at the start frame, a force vector at the middle of every frame it acts on."""
    from .core import Conditions  # torch loads on first use, not at Blender start-up

    settings = obj.neurok
    if not settings.mass > 0:
        raise ValueError(f"mass must be positive, got {settings.mass} kg")
    curves = animation_curves(obj)
    velocity = value_at(curves, "neurok.velocity", settings.velocity, start)
    spin = value_at(curves, "neurok.angular_velocity", settings.angular_velocity, start)
    forces = [f for i, force in enumerate(settings.forces) for f in _forces(obj, curves, i, force, start, base, scale)]
    return Conditions(
        frames=end - start + 1,
        fps=scene.render.fps / scene.render.fps_base,
        gravity=tuple(np.array(scene.gravity) * scale) if scene.use_gravity else (0.0, 0.0, 0.0),
        ground_height=settings.ground_height * scale if settings.use_ground else None,
        velocity=tuple(np.array(velocity) * scale),
        angular_velocity=tuple(spin),
        forces=forces,
        pull=_pull(obj, scale, vertex_count) if settings.use_pull else None,
        pins=_pins(obj, vertex_count),
        mass=settings.mass * scale**3,
        friction=settings.friction,
        restitution=settings.restitution,
        drag=settings.drag,
        category=settings.category,
        stiffness=settings.stiffness,
        damping=settings.damping,
        plasticity=settings.plasticity,
        integrator=settings.integrator,
        substeps=settings.substeps or None,
        sleep=settings.sleep,
    )


def _forces(obj, curves, index, force, start, base, scale):
    """One core.Force for a constant vector; one per frame (its mid-frame value) for a keyframed one."""
    from .core import Force

    if force.target is not None:
        point = np.asarray(force.target.matrix_world.translation) * scale
    elif force.vertex_group:
        point = base[vertex_group_indices(obj, force.vertex_group)] * scale
    else:
        raise ValueError("each force needs a target object or a vertex group")
    path = f"neurok.forces[{index}].vector"
    if not any((path, i) in curves for i in range(3)):
        return [Force(tuple(force.vector), point=point, start_frame=force.frame_start - start,
                      end_frame=force.frame_end - start)]
    return [Force(value_at(curves, path, force.vector, frame + 0.5), point=point, start_frame=frame - start,
                  end_frame=frame + 1 - start) for frame in range(force.frame_start, force.frame_end)]


def _pins(obj, vertex_count):
    """The vertices of the Pin group (any weight above zero), or None when there is none."""
    name = obj.neurok.pin_group
    if not name:
        return None
    if vertex_count != len(obj.data.vertices):
        raise ValueError(f"the modifiers of '{obj.name}' change its vertices, so the pinned ones cannot be found "
                         "in the simulated mesh; apply them or clear Pin")
    return vertex_group_indices(obj, name).tolist()


def _pull(obj, scale, vertex_count):
    from .core import Pull

    settings = obj.neurok
    if not settings.pull_vertex_group:
        raise ValueError("Pull and Release needs a handle: pick the vertex group to pull")
    if vertex_count != len(obj.data.vertices):
        raise ValueError(f"the modifiers of '{obj.name}' change its vertices, so the pull handle cannot be "
                         "found in the simulated mesh; apply them or turn Pull and Release off")
    return Pull(vertex_group_indices(obj, settings.pull_vertex_group).tolist(),
                tuple(np.array(settings.pull_offset) * scale))


def animation_curves(obj) -> dict:
    """The object's F-curves by (data path, array index): the action's own (4.2, 4.3) or its slot's."""
    animation = obj.animation_data
    if animation is None or animation.action is None:
        return {}
    action = animation.action
    if hasattr(action, "slots"):
        from bpy_extras import anim_utils

        bag = anim_utils.action_get_channelbag_for_slot(action, animation.action_slot)
        fcurves = bag.fcurves if bag is not None else ()
    else:
        fcurves = action.fcurves
    return {(c.data_path, c.array_index): c for c in fcurves}


def value_at(curves: dict, path: str, current, frame: float) -> tuple:
    """A vector setting at ``frame``: its F-curves where keyed, its current value elsewhere."""
    return tuple(curves[path, i].evaluate(frame) if (path, i) in curves else current[i] for i in range(len(current)))


def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    return scene.unit_settings.scale_length if scene.unit_settings.system != "NONE" else 1.0


def read_rest_mesh(obj, depsgraph):
    """World-space evaluated vertices (V, 3) and triangles (F, 3), and the reference-key (or plain)
    vertices of the base mesh in world space, which the bake will move (the object's own shape keys
    are added on top at playback, ``handoff.py``). Read it inside ``hooks.as_before_bake``, which
    mutes our own bake."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        vertices = _read(mesh.vertices, "co", 3, np.float64)
        triangles = _read(mesh.loop_triangles, "vertices", 3, np.int64)
    finally:
        evaluated.to_mesh_clear()
    world = np.array(evaluated.matrix_world, dtype=np.float64)
    check_transform(obj.name, world)
    key = obj.data.shape_keys
    base = _read(key.reference_key.data if key else obj.data.vertices, "co", 3, np.float64)
    return transform(vertices, world), triangles, transform(base, world)


def vertex_group_indices(obj, name: str) -> np.ndarray:
    group = obj.vertex_groups.get(name)
    if group is None:
        raise ValueError(f"'{obj.name}' has no vertex group '{name}'")
    members = np.flatnonzero(vertex_group_weights(obj, group) > 0)
    if not len(members):
        raise ValueError(f"vertex group '{name}' of '{obj.name}' is empty")
    return members.astype(np.int64)


def vertex_group_weights(obj, group) -> np.ndarray:
    """The weight (V,) of each vertex in ``group``, 0 outside it (Blender has no bulk read of these)."""
    weights = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == group.index:
                weights[v.index] = g.weight
    return weights


def transform(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def _read(collection, attribute, width, dtype):
    out = np.empty(len(collection) * width, dtype=np.float32 if dtype == np.float64 else np.int32)
    collection.foreach_get(attribute, out)
    return out.reshape(-1, width).astype(dtype)
