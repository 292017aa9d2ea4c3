"""One-click export of a bake through Blender's own exporters: glTF (the shape keys become morph
targets with their weight animation) and Alembic (the evaluated mesh at every baked frame)."""

import os

import bpy

FORMATS = {".glb": "glTF binary", ".gltf": "glTF with a separate .bin", ".abc": "Alembic"}


def export_object(obj, path: str) -> str:
    """Export the baked motion of ``obj`` to ``path`` (.glb, .gltf or .abc); returns the absolute path.

    Only ``obj`` is written; the selection, active object and current frame are restored afterwards.
    """
    return export_objects([obj], path)


def export_objects(objects, path: str) -> str:
    """``export_object`` for several baked objects in one file (bodies simulated together)."""
    path = os.path.abspath(bpy.path.abspath(path))
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise ValueError(f"cannot export to '{extension or path}': use one of {', '.join(FORMATS)}")
    if not objects or any(obj is None or obj.type != "MESH" or not obj.neurok.is_baked for obj in objects):
        raise ValueError("select a baked mesh object to export (click Simulate first)")
    if extension != ".abc" and any(obj.neurok.output == "POINT_CACHE" for obj in objects):
        raise ValueError("glTF carries shape keys, not point caches: bake as shape keys or export Alembic")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    view_layer, scene = bpy.context.view_layer, bpy.context.scene
    selected, active, frame = list(bpy.context.selected_objects), view_layer.objects.active, scene.frame_current
    try:
        for other in selected:
            other.select_set(False)
        for obj in objects:
            obj.select_set(True)
        view_layer.objects.active = objects[0]
        start = min(obj.neurok.bake_frame_start for obj in objects)
        end = max(obj.neurok.bake_frame_end for obj in objects)
        if extension == ".abc":
            bpy.ops.wm.alembic_export(filepath=path, selected=True, start=start, end=end, check_existing=False)
        else:
            bpy.ops.export_scene.gltf(filepath=path, export_format="GLB" if extension == ".glb" else "GLTF_SEPARATE",
                                      use_selection=True, export_morph=True, export_animations=True,
                                      check_existing=False)
    finally:
        for obj in objects:
            obj.select_set(False)
        for other in selected:
            other.select_set(True)
        view_layer.objects.active = active
        scene.frame_set(frame)
    if not os.path.exists(path):
        raise RuntimeError(f"Blender's exporter wrote nothing to {path}")
    return path
