"""Shape-key baking: one key per frame, keyed 0-1-0 with LINEAR interpolation, bulk writes only.

Blender 4.4 moved F-curves into action slots and channel bags, and 5.0 removed ``Action.fcurves``;
``_fcurves`` is the one place that knows both.
"""

import bpy
import numpy as np

KEY_PREFIX = "NeuROK_"
LINEAR = 1  # Keyframe.interpolation enum value of 'LINEAR' for foreach_set


def key_name(frame: int) -> str:
    return f"{KEY_PREFIX}{frame:04d}"


def bake_shape_keys(obj, local_positions: np.ndarray, frame_start: int) -> None:
    """Add a key per frame from (F, V, 3) object-space positions; the first is shown at ``frame_start``.

    Keys are relative to the reference key, so other shape keys keep working. Before the first frame
    and after the last, the first and last keys stay on (constant extrapolation).
    """
    settings = obj.neurok
    settings.bake_created_basis = obj.data.shape_keys is None
    if settings.bake_created_basis:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.data.shape_keys
    frames = frame_start + np.arange(len(local_positions))
    for frame, co in zip(frames, local_positions):
        block = obj.shape_key_add(name=key_name(int(frame)), from_mix=False)
        block.data.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
        block.value = 0.0

    animation = key.animation_data or key.animation_data_create()
    settings.bake_created_action = animation.action is None
    if settings.bake_created_action:
        animation.action = bpy.data.actions.new(f"{obj.name}_NeuROK")
    curves = _fcurves(key, animation)
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        points = [(frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)][i == 0 : 3 - (i == last)]
        curve = curves.new(f'key_blocks["{key_name(int(frame))}"].value')
        curve.keyframe_points.add(len(points))
        curve.keyframe_points.foreach_set("co", np.asarray(points, dtype=np.float32).ravel())
        curve.keyframe_points.foreach_set("interpolation", np.full(len(points), LINEAR, dtype=np.int32))
        curve.update()
    settings.bake_frame_start, settings.bake_frame_end = int(frames[0]), int(frames[-1])
    settings.is_baked = True


def clear_bake(obj) -> int:
    """Remove exactly what ``bake_shape_keys`` made; return the number of keys removed."""
    settings = obj.neurok
    if not settings.is_baked:
        return 0
    key = obj.data.shape_keys
    names = {key_name(f) for f in range(settings.bake_frame_start, settings.bake_frame_end + 1)}
    removed = 0
    if key is not None:
        animation = key.animation_data
        if animation is not None and animation.action is not None:
            curves = _fcurves(key, animation)
            for curve in [c for c in curves if c.data_path.startswith('key_blocks["' + KEY_PREFIX)]:
                if curve.data_path[len('key_blocks["'):-len('"].value')] in names:
                    curves.remove(curve)
            if settings.bake_created_action and not _has_curves(animation.action):
                action = animation.action
                animation.action = None
                bpy.data.actions.remove(action)
        for block in [b for b in key.key_blocks if b.name in names]:
            obj.shape_key_remove(block)
            removed += 1
        if settings.bake_created_basis and len(key.key_blocks) == 1:
            obj.shape_key_clear()
    settings.is_baked = False
    return removed


def _fcurves(key, animation):
    """The F-curve collection that animates ``key``: the action's own (4.2, 4.3) or its slot's channel bag."""
    action = animation.action
    if not hasattr(action, "slots"):
        return action.fcurves
    from bpy_extras import anim_utils

    slot = animation.action_slot
    if slot is None:
        slot = action.slots.new(id_type="KEY", name=key.name)
        animation.action_slot = slot
    return anim_utils.action_ensure_channelbag_for_slot(action, slot).fcurves


def _has_curves(action) -> bool:
    if not hasattr(action, "slots"):
        return len(action.fcurves) > 0
    return any(len(bag.fcurves) for layer in action.layers for strip in layer.strips for bag in strip.channelbags)
