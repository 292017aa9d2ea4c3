"""A small headless photo studio for Blender scenes: camera, sun and sky, Cycles on the CPU, contact sheets.

The demo and the corpus validation frame their pictures with these, so they look alike.
"""

import tempfile
from pathlib import Path

SKY = (0.55, 0.65, 0.8, 1.0)
GROUND_DROP = 0.002  # m: how far below z = 0 the pictured ground is drawn (render_scene)


def material(name, color, roughness):
    """A Principled BSDF material of one colour."""
    import bpy

    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    shader = mat.node_tree.nodes["Principled BSDF"]
    shader.inputs["Base Color"].default_value = color
    shader.inputs["Roughness"].default_value = roughness
    return mat


def look_at_camera(scene, location, target, lens=None):
    """Add the scene's camera at ``location`` looking at ``target``."""
    import bpy
    from mathutils import Vector

    bpy.ops.object.camera_add(location=tuple(location))
    camera = bpy.context.active_object
    camera.rotation_euler = (Vector(tuple(target)) - camera.location).to_track_quat("-Z", "Y").to_euler()
    if lens is not None:
        camera.data.lens = lens
    scene.camera = camera
    return camera


def sun_and_sky(scene, rotation, energy):
    """A sun lamp and a plain sky-blue world."""
    import bpy

    bpy.ops.object.light_add(type="SUN", rotation=rotation)
    bpy.context.active_object.data.energy = energy
    world = bpy.data.worlds.new("World")
    world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = SKY
    scene.world = world


def cycles_cpu(scene, samples, width, height):
    """Cycles on the CPU without denoising (works on any machine, headless)."""
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = width, height


PALETTE = ((0.85, 0.4, 0.1, 1.0), (0.1, 0.3, 0.8, 1.0), (0.2, 0.6, 0.3, 1.0), (0.75, 0.2, 0.5, 1.0),
           (0.9, 0.75, 0.2, 1.0))  # the bodies of a picture, in turn


def render_scene(meshes, path, obstacles=(), framing=None):
    """One small Cycles picture of mesh states, each (vertices, faces) in the next PALETTE colour, on
    the ground, with the obstacles in grey (boxes, spheres, or meshes: {"kind": "mesh", "vertices",
    "faces"}), framed on the meshes or on the points ``framing`` (to show two states of a body alike)."""
    import bpy
    import numpy as np

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    for index, (vertices, faces) in enumerate(meshes):
        mesh = bpy.data.meshes.new(f"state{index}")
        mesh.from_pydata(np.asarray(vertices).tolist(), [], np.asarray(faces).tolist())
        mesh.materials.append(material(f"part{index}", PALETTE[index % len(PALETTE)], 0.4))
        scene.collection.objects.link(bpy.data.objects.new(f"state{index}", mesh))
    # drawn a little low: a sheet resting on the solver's penalty ground sits g / k (0.1 mm) in it
    bpy.ops.mesh.primitive_plane_add(size=100.0, location=(0.0, 0.0, -GROUND_DROP))
    grey = material("ground", (0.6, 0.6, 0.62, 1.0), 0.7)
    bpy.context.active_object.data.materials.append(grey)
    for o in obstacles:
        if o["kind"] == "sphere":
            bpy.ops.mesh.primitive_uv_sphere_add(radius=o["radius"], location=o["center"])
        elif o["kind"] == "mesh":
            mesh = bpy.data.meshes.new("obstacle")
            mesh.from_pydata(np.asarray(o["vertices"]).tolist(), [], np.asarray(o["faces"]).tolist())
            obstacle = bpy.data.objects.new("obstacle", mesh)
            scene.collection.objects.link(obstacle)
            bpy.context.view_layer.objects.active = obstacle
        else:
            bpy.ops.mesh.primitive_cube_add(size=1.0, location=np.asarray(o["corner"]) + np.asarray(o["size"]) / 2,
                                            scale=o["size"])
        bpy.context.view_layer.objects.active.data.materials.append(grey)
    framed = np.concatenate([np.asarray(v) for v, _ in meshes]) if framing is None else framing
    center, extent = framed.mean(0), float(np.ptp(framed, axis=0).max()) + 0.02
    look_at_camera(scene, center + np.array([0.6, -2.0, 1.3]) * extent, center)
    sun_and_sky(scene, rotation=(0.6, 0.2, 0.5), energy=4.0)
    cycles_cpu(scene, samples=16, width=200, height=150)
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def contact_sheet(paths: list[Path], destination: Path, columns=4):
    """Tile rendered frames into one PNG or JPEG (by suffix) with Blender's own image API."""
    import bpy
    import numpy as np

    tiles = []
    for path in paths:
        image = bpy.data.images.load(str(path))
        pixels = np.empty(image.size[0] * image.size[1] * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        tiles.append(pixels.reshape(image.size[1], image.size[0], 4))
        bpy.data.images.remove(image)
    h, w, _ = tiles[0].shape
    rows = -(-len(tiles) // columns)
    sheet = np.ones((rows * h, columns * w, 4), dtype=np.float32)
    for i, tile in enumerate(tiles):
        r = rows - 1 - i // columns  # Blender images start at the bottom row
        sheet[r * h:(r + 1) * h, (i % columns) * w:(i % columns + 1) * w] = tile
    image = bpy.data.images.new("contact_sheet", columns * w, rows * h, alpha=True)
    image.pixels.foreach_set(sheet.ravel())
    image.filepath_raw = str(destination)
    image.file_format = "JPEG" if destination.suffix.lower() in (".jpg", ".jpeg") else "PNG"
    image.save()


def mesh_sheet(states, destination: Path, columns: int, framings=None):
    """Render each (meshes, obstacles) state with ``render_scene`` (framed on ``framings[i]`` where
    given) and tile them row by row."""
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, (meshes, obstacles) in enumerate(states):
            paths.append(Path(folder) / f"state-{i:04d}.png")
            render_scene(meshes, paths[-1], obstacles, None if framings is None else framings[i])
        Path(destination).parent.mkdir(parents=True, exist_ok=True)
        contact_sheet(paths, Path(destination), columns=columns)
