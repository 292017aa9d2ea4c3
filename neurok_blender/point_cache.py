"""Point-cache baking: the motion in a PC2 file, played by a Mesh Cache modifier.

Lighter than shape keys for long or heavy bakes: the .blend stays small and Blender reads one frame
at a time. PC2 (the format of 3ds Max's Point Cache 2, read by Blender's Mesh Cache modifier):
a 32-byte little-endian header, then float32 positions [samples][points][3].
"""

import os
import struct
import uuid

import bpy
import numpy as np

MAGIC = b"POINTCACHE2\0"
HEADER = struct.Struct("<12siiffi")  # magic, version 1, points, start, sampling, samples
MODIFIER_PREFIX = "NeuROK Cache"


def write_pc2(path, positions: np.ndarray) -> None:
    """(F, V, 3) positions, sample i at time i (the modifier's frame offset places it). Written to a
    temporary name and renamed, so a reader never sees half a file."""
    positions = np.ascontiguousarray(positions, dtype="<f4")
    frames, points, _ = positions.shape
    partial = f"{path}.partial"
    with open(partial, "wb") as fh:
        fh.write(HEADER.pack(MAGIC, 1, points, 0.0, 1.0, frames))
        positions.tofile(fh)  # from the array itself: tobytes would copy it whole first
    os.replace(partial, path)


def read_pc2(path) -> np.ndarray:
    with open(path, "rb") as fh:
        magic, _, points, _, _, frames = HEADER.unpack(fh.read(HEADER.size))
        if magic != MAGIC:
            raise ValueError(f"{path} is not a PC2 point cache")
        data = np.frombuffer(fh.read(), dtype="<f4")
    if data.size != frames * points * 3:
        raise ValueError(f"{path} is truncated: {data.size} floats for {frames} frames of {points} points")
    return data.reshape(frames, points, 3)


def bake_point_cache(obj, local_positions: np.ndarray, frame_start: int, folder: str) -> None:
    """Write the (F, V, 3) object-space positions to a new file in ``folder`` and play it with a Mesh
    Cache modifier at the top of the stack (it replaces the base mesh, as shape keys would). Each
    bake writes a file of its own name, so one that undo writes back (``restore_cleared_caches``)
    never overwrites another bake's."""
    settings = obj.neurok
    path = os.path.join(folder, f"{bpy.path.clean_name(obj.name)}-{uuid.uuid4().hex[:8]}.pc2")
    write_pc2(path, local_positions)
    modifier = obj.modifiers.new(MODIFIER_PREFIX, "MESH_CACHE")
    try:
        modifier.cache_format = "PC2"
        modifier.filepath = path
        modifier.frame_start = float(frame_start)  # sample i shows at frame_start + i, held outside
        modifier.interpolation = "LINEAR"  # sub-frames blend neighbours, as the shape keys do
        obj.modifiers.move(len(obj.modifiers) - 1, 0)
    except BaseException:
        obj.modifiers.remove(modifier)
        raise
    settings.bake_modifier = modifier.name
    settings.bake_cache_file = path
    settings.bake_frame_start, settings.bake_frame_end = frame_start, frame_start + len(local_positions) - 1


def clear_point_cache(obj) -> bool:
    """Remove the modifier the last point-cache bake added and its file; True if removed. The file's
    bytes are kept in memory (``_cleared``), so undoing the Clear finds the file again."""
    settings = obj.neurok
    modifier = obj.modifiers.get(settings.bake_modifier) if settings.bake_modifier else None
    removed = modifier is not None and modifier.type == "MESH_CACHE"
    if removed:
        obj.modifiers.remove(modifier)
        _remove_file(settings.bake_cache_file)
    settings.bake_modifier = ""
    settings.bake_cache_file = ""
    return removed


# Cache files Clear deleted, newest last, so that undo can write them back: path -> bytes, at most
# UNDO_BYTES together (the oldest go first; a cache larger than that alone is not kept).
UNDO_BYTES = 2**30
_cleared: dict[str, bytes] = {}


def _remove_file(path: str) -> None:
    if not path or not os.path.isfile(path):
        return
    if os.path.getsize(path) <= UNDO_BYTES:
        with open(path, "rb") as fh:
            _cleared.pop(path, None)
            _cleared[path] = fh.read()
        while sum(map(len, _cleared.values())) > UNDO_BYTES:
            _cleared.pop(next(iter(_cleared)))
    os.remove(path)


@bpy.app.handlers.persistent
def restore_cleared_caches(*_):
    """After an undo or redo: write back the files of NeuROK cache modifiers that Clear deleted."""
    for obj in bpy.data.objects:
        for modifier in getattr(obj, "modifiers", ()):
            path = getattr(modifier, "filepath", "")
            if modifier.type == "MESH_CACHE" and path in _cleared and not os.path.exists(path):
                with open(path, "wb") as fh:
                    fh.write(_cleared[path])
