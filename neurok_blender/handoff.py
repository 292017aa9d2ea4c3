"""What else moves the object while the bake plays: its animated transform and its own shape keys.

An animated object hands its motion over to the simulation (the usual animated-to-simulated switch):
its velocity and spin at the start frame are added to the initial ones, and each baked frame t is
stored in the object's space at that frame, local_t = W_t^-1 x_t, so its keyframes, which keep
playing, carry the baked mesh exactly to the simulated x_t at every frame.

The object's own relative shape keys add local offsets o_t = sum_k v_k(t) w_k (K_k - K_rel(k)) to the
base mesh. Left alone they would stay in the rest orientation while the body turns (shearing it
apart); the bake turns them with the body instead: each baked key gets (M_t - 1) o_t with
M_t = W_t^-1 R_t W_0 (R_t the body's rotation since the start, in world space), so the mesh shows
x_t + M_t o_t.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .bake import KEY_PREFIX
from .scene_io import vertex_group_weights


@dataclass
class HandOff:
    worlds: np.ndarray  # (F, 4, 4) the object's world matrix at each baked frame
    key_values: np.ndarray  # (F, K) the object's own shape-key influences at each baked frame
    key_offsets: np.ndarray  # (K, V, 3) each key's local offset at influence 1 (vertex group applied)
    velocity: np.ndarray  # (3,) scene units/s of the centre of mass at the start frame, from the animation
    angular_velocity: np.ndarray  # (3,) rad/s, from the animation
    notes: tuple[str, ...] = ()

    def local_positions(self, world_positions: np.ndarray, rotations: np.ndarray) -> np.ndarray:
        """(F, V, 3) float32 object-space positions to bake from simulated world positions (scene units,
        float32) and the body's world rotations (F, 3, 3), so that the object shows them at every frame."""
        inverse = np.linalg.inv(self.worlds)
        local = np.einsum("fij,fvj->fvi", inverse[:, :3, :3].astype(np.float32), world_positions)
        local += inverse[:, None, :3, 3].astype(np.float32)
        if len(self.key_offsets):
            turned = inverse[:, :3, :3] @ rotations @ rotations[:1].transpose(0, 2, 1) @ self.worlds[:1, :3, :3]
            for frame, values in enumerate(self.key_values):  # a frame at a time: no (F, V, 3) temporaries
                offsets = np.einsum("k,kvi->vi", values, self.key_offsets)
                local[frame] += offsets @ (turned[frame] - np.eye(3)).T
        return local


def read_hand_off(obj, scene, start: int, end: int, vertices: np.ndarray, triangles: np.ndarray) -> HandOff:
    """The object's transform and own shape-key influences over [start, end] (each frame evaluated,
    drivers included, when anything is animated) and the velocity of its centre of mass (of the
    world-space mesh ``vertices``, ``triangles``) and its spin at ``start``, from the transform at
    start -+ half a frame. Leaves the scene at another frame when animated: call it inside ``at_frame``."""
    keys = _own_keys(obj)
    notes = ()
    if obj.data.shape_keys is not None and not obj.data.shape_keys.use_relative and keys:
        notes, keys = ("its absolute shape keys stay in the rest orientation",), []
    offsets = np.stack([_offset(obj, block) for block in keys]) if keys else np.zeros((0, len(obj.data.vertices), 3))
    frames = end - start + 1
    if not animated(obj):
        world = np.array(obj.matrix_world, dtype=np.float64)
        values = np.array([[block.value for block in keys]] * frames).reshape(frames, len(keys))
        return HandOff(np.repeat(world[None], frames, 0), values, offsets, np.zeros(3), np.zeros(3), notes)
    worlds, values = [], []
    for frame in range(start, end + 1):
        scene.frame_set(frame)
        worlds.append(np.array(obj.matrix_world, dtype=np.float64))
        values.append([block.value for block in keys])
    before, after = (_world_at(scene, obj, start + d) for d in (-0.5, 0.5))
    from .core.mesh import mass_properties  # torch loads with the solver, not with Blender

    center = mass_properties(vertices, triangles, 1.0).center
    fps = scene.render.fps / scene.render.fps_base
    spin = _rotation_vector(_rotation(after) @ _rotation(before).T) * fps
    velocity = ((after @ np.linalg.solve(before, np.append(center, 1.0)))[:3] - center) * fps
    if np.abs(worlds[0] - worlds).max() > 0 and (velocity.any() or spin.any()):
        notes += (f"its animation hands over at frame {start} moving at {np.linalg.norm(velocity):.3g} units/s "
                  f"and turning at {np.linalg.norm(spin):.3g} rad/s, and the bake follows its keyframed transform",)
    return HandOff(np.stack(worlds), np.array(values).reshape(frames, len(keys)), offsets, velocity, spin, notes)


@contextmanager
def at_frame(obj, scene, frame: int):
    """Evaluate the scene at ``frame`` while inside (when ``obj`` is animated), then go back."""
    if not animated(obj):
        yield
        return
    current, subframe = scene.frame_current, scene.frame_subframe
    try:
        scene.frame_set(frame)
        yield
    finally:
        scene.frame_set(current, subframe=subframe)


def _own_keys(obj):
    """The shape keys that are the artist's, not the reference key nor the last bake's, and not muted."""
    key = obj.data.shape_keys
    if key is None:
        return []
    return [b for b in key.key_blocks[1:] if not b.name.startswith(KEY_PREFIX) and not b.mute]


def _offset(obj, block) -> np.ndarray:
    """A relative key's local offset at influence 1: (K - K_rel) times its vertex group's weights."""
    count = len(obj.data.vertices)
    co, rel = np.empty(count * 3, np.float32), np.empty(count * 3, np.float32)
    block.data.foreach_get("co", co)
    block.relative_key.data.foreach_get("co", rel)
    offset = (co - rel).reshape(-1, 3).astype(np.float64)
    group = obj.vertex_groups.get(block.vertex_group) if block.vertex_group else None
    if group is not None:
        offset *= vertex_group_weights(obj, group)[:, None]
    return offset


def animated(obj) -> bool:
    """Whether its transform or its shape-key influences may change with the frame: animation data
    (keyframes, drivers, NLA) or constraints on it or a parent, or on its shape keys."""
    key = obj.data.shape_keys
    if key is not None and key.animation_data is not None:
        return True
    while obj is not None:
        if obj.animation_data is not None or len(obj.constraints):
            return True
        obj = obj.parent
    return False


def _world_at(scene, obj, time: float) -> np.ndarray:
    frame = int(np.floor(time))
    scene.frame_set(frame, subframe=time - frame)
    return np.array(obj.matrix_world, dtype=np.float64)


def _rotation(world: np.ndarray) -> np.ndarray:
    """The rotation of a world matrix, its scale and shear taken out (polar decomposition)."""
    u, _, vt = np.linalg.svd(world[:3, :3])
    return u @ vt


def _rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """theta n of a rotation matrix (log map; turns below pi, as in one frame)."""
    angle = np.arccos(np.clip((np.trace(rotation) - 1) / 2, -1.0, 1.0))
    axis = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0], rotation[1, 0] - rotation[0, 1]])
    return axis * (0.5 if angle < 1e-9 else angle / (2 * np.sin(angle)))
