"""What a bake leaves in the scene: shape keys (``bake.py``) or a point cache (``point_cache.py``),
chosen by ``obj.neurok.output``; Clear removes whichever the last bake made."""

from .bake import bake_shape_keys, clear_bake
from .hooks import turn_on
from .point_cache import bake_point_cache, clear_point_cache
from .preferences import cache_folder


def bake(obj, local_positions, frame_start: int) -> None:
    """Replace the last bake of ``obj`` by (F, V, 3) object-space positions from ``frame_start`` on."""
    clear(obj)
    if obj.neurok.output == "POINT_CACHE":
        bake_point_cache(obj, local_positions, frame_start, cache_folder())
        obj.neurok.is_baked, obj.neurok.bake_created_basis = True, False
    else:
        bake_shape_keys(obj, local_positions, frame_start)


def clear(obj) -> str:
    """Remove the last bake and turn back on the hooks it turned off; says what went."""
    cache = clear_point_cache(obj)
    keys = clear_bake(obj)
    hooks = turn_on(obj)
    obj.neurok.is_baked = False
    said = "removed the point-cache modifier and its file" if cache else f"removed {keys} baked shape keys"
    return said + (f" and turned {hooks} hook modifier{'s' * (hooks > 1)} back on" if hooks else "")
