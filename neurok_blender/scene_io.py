"""Reading what the artist sees: the evaluated mesh in world space, and the settings as Conditions."""

import bpy
import numpy as np

from .bake import KEY_PREFIX


def check_target(obj) -> None:
    """Raise ValueError saying why ``obj`` cannot be simulated; touch nothing."""
    if obj is None:
        raise ValueError("No active object: select a mesh to simulate")
    if obj.type != "MESH":
        raise ValueError(f"'{obj.name}' is a {obj.type.lower()}, not a mesh")
    if obj.library is not None or obj.data.library is not None:
        raise ValueError(f"'{obj.name}' is linked from a library; make it local to bake shape keys on it")
    if obj.data.users > 1:
        raise ValueError(f"the mesh of '{obj.name}' is shared by {obj.data.users} users; "
                         "make it single-user so the bake does not move the others")
    if obj.mode == "EDIT":
        raise ValueError("leave Edit Mode before simulating")
    if len(obj.data.vertices) == 0:
        raise ValueError(f"'{obj.name}' has no vertices")


def frame_range(obj, scene) -> tuple[int, int]:
    s = obj.neurok
    start = scene.frame_current if s.use_current_frame else s.frame_start
    if s.frame_end <= start:
        raise ValueError(f"the end frame ({s.frame_end}) must come after the start frame ({start})")
    return start, s.frame_end


def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    return scene.unit_settings.scale_length if scene.unit_settings.system != "NONE" else 1.0


def read_rest_mesh(obj, depsgraph):
    """World-space evaluated vertices (V, 3) and triangles (F, 3) with our own bake muted, and the
    reference-key (or plain) vertices of the base mesh in world space, which the bake will move."""
    ours = [b for b in (obj.data.shape_keys.key_blocks if obj.data.shape_keys else []) if b.name.startswith(KEY_PREFIX)]
    was_muted = [b.mute for b in ours]
    try:
        for b in ours:
            b.mute = True
        depsgraph.update()
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            vertices = _read(mesh.vertices, "co", 3, np.float64)
            triangles = _read(mesh.loop_triangles, "vertices", 3, np.int64)
        finally:
            evaluated.to_mesh_clear()
        world = np.array(evaluated.matrix_world, dtype=np.float64)
    finally:
        for b, muted in zip(ours, was_muted):
            b.mute = muted
        depsgraph.update()
    key = obj.data.shape_keys
    base = _read(key.reference_key.data if key else obj.data.vertices, "co", 3, np.float64)
    return transform(vertices, world), triangles, transform(base, world), world


def vertex_group_indices(obj, name: str) -> np.ndarray:
    group = obj.vertex_groups.get(name)
    if group is None:
        raise ValueError(f"'{obj.name}' has no vertex group '{name}'")
    index = group.index
    members = [v.index for v in obj.data.vertices if any(g.group == index and g.weight > 0 for g in v.groups)]
    if not members:
        raise ValueError(f"vertex group '{name}' of '{obj.name}' is empty")
    return np.asarray(members, dtype=np.int64)


def transform(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def _read(collection, attribute, width, dtype):
    out = np.empty(len(collection) * width, dtype=np.float32 if dtype == np.float64 else np.int32)
    collection.foreach_get(attribute, out)
    return out.reshape(-1, width).astype(dtype)
