"""Shape-key baking: one key per frame, keyed 0-1-0 with LINEAR interpolation, bulk writes only.

Blender 4.4 moved F-curves into action slots and channel bags, and 5.0 removed ``Action.fcurves``;
``_fcurves`` is the one place that knows both.
"""

import bpy
import numpy as np

KEY_PREFIX = "NeuROK_"
LINEAR = 1  # Keyframe.interpolation enum value of 'LINEAR' for foreach_set


def bake_shape_keys(obj, local_positions: np.ndarray, frame_start: int) -> None:
    """Add a key per frame from (F, V, 3) object-space positions; the first is shown at ``frame_start``.

    Keys are relative to the reference key, so other shape keys keep working. Before the first frame
    and after the last, the first and last keys stay on (constant extrapolation). What is created is
    recorded in ``obj.neurok`` as it goes, so a failure half-way is cleared completely.
    """
    settings = obj.neurok
    settings.bake_created_basis = obj.data.shape_keys is None
    settings.bake_keys = ""
    settings.bake_action = None
    settings.is_baked = True
    try:
        _bake(obj, settings, local_positions, frame_start)
    except BaseException:
        clear_bake(obj)
        raise


def _bake(obj, settings, local_positions, frame_start):
    if settings.bake_created_basis:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.data.shape_keys
    frames = frame_start + np.arange(len(local_positions))
    names = []
    for frame, co in zip(frames, local_positions):
        block = obj.shape_key_add(name=f"{KEY_PREFIX}{frame:04d}", from_mix=False)
        block.data.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
        block.value = 0.0
        names.append(block.name)  # Blender may have made the name unique
        settings.bake_keys = "\n".join(names)

    animation = key.animation_data or key.animation_data_create()
    if animation.action is None:
        animation.action = bpy.data.actions.new(f"{obj.name}_NeuROK")
        settings.bake_action = animation.action
    curves = _fcurves(key, animation)
    last = len(frames) - 1
    for i, (frame, name) in enumerate(zip(frames, names)):
        points = [(frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)][i == 0 : 3 - (i == last)]
        curve = curves.new(_data_path(name))
        curve.keyframe_points.add(len(points))
        curve.keyframe_points.foreach_set("co", np.asarray(points, dtype=np.float32).ravel())
        curve.keyframe_points.foreach_set("interpolation", np.full(len(points), LINEAR, dtype=np.int32))
        curve.update()
    settings.bake_frame_start, settings.bake_frame_end = int(frames[0]), int(frames[-1])


def clear_bake(obj) -> int:
    """Remove exactly what ``bake_shape_keys`` made; return the number of keys removed."""
    settings = obj.neurok
    if not settings.is_baked:
        return 0
    names = set(filter(None, settings.bake_keys.split("\n")))
    key = obj.data.shape_keys
    removed = 0
    if key is not None:
        animation = key.animation_data
        if animation is not None and animation.action is not None:
            curves = _fcurves(key, animation)
            paths = {_data_path(n) for n in names}
            for curve in [c for c in curves if c.data_path in paths]:
                curves.remove(curve)
            ours = settings.bake_action
            if ours is not None and animation.action == ours and not _has_curves(ours):
                animation.action = None
                bpy.data.actions.remove(ours)
        for block in [b for b in key.key_blocks if b.name in names]:
            obj.shape_key_remove(block)
            removed += 1
        if settings.bake_created_basis and len(key.key_blocks) == 1:
            obj.shape_key_clear()
    settings.is_baked = False
    settings.bake_keys = ""
    settings.bake_action = None
    return removed


def _data_path(key_name: str) -> str:
    return f'key_blocks["{key_name}"].value'


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
