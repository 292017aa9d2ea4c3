"""The demo: a scene built headless, a jelly head and a rigid crate thrown together onto a stone
plinth (a Collision-modifier obstacle) and the ground, simulated in one solve, baked, rendered.

    python -m tools.demo [OUTPUT_DIR]        (./run demo does this after setting up)

Writes OUTPUT_DIR/frames/*.png (Cycles, CPU), OUTPUT_DIR/contact_sheet.png and OUTPUT_DIR/demo.blend,
which plays back in any Blender without the add-on.
"""

import argparse
import time
from pathlib import Path

from tools.build_extension import isolate_user_folders
from tools.stage import contact_sheet, cycles_cpu, look_at_camera, material, sun_and_sky

FRAMES = (1, 72)
RENDER_EVERY = 3
SHEET_FRAMES = (1, 10, 16, 22, 31, 43, 55, 72)
PLINTH = ((0.0, 0.6, 0.35), (1.8, 1.8, 0.7))  # centre, size (m)
MONKEY = ((-1.7, 0.5, 1.3), (2.0, 0.0, 1.6), (2.0, 3.0, 1.0))  # start, velocity, spin (m, m/s, rad/s)
CRATE = ((0.3, 0.6, 2.4), (-0.3, 0.0, 0.0), (0.0, 0.0, 1.0))  # onto the plinth; the head slides into it


def build_scene():
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = FRAMES

    bpy.ops.mesh.primitive_plane_add(size=200.0)
    ground = bpy.context.active_object
    ground.name = "Ground"
    ground.data.materials.append(material("Ground", (0.55, 0.56, 0.58, 1.0), 0.6))

    bpy.ops.mesh.primitive_cube_add(size=1.0, location=PLINTH[0])
    plinth = bpy.context.active_object
    plinth.name, plinth.scale = "Plinth", PLINTH[1]
    plinth.modifiers.new("Collision", "COLLISION")  # an obstacle, as for Blender's Cloth and Soft Body
    plinth.collision.cloth_friction = 60.0  # rough stone: Coulomb 0.6
    plinth.data.materials.append(material("Stone", (0.42, 0.4, 0.37, 1.0), 0.7))

    bpy.ops.mesh.primitive_monkey_add(size=1.0, location=MONKEY[0], rotation=(0.3, 0.0, 0.4))
    monkey = bpy.context.active_object
    monkey.name = "Suzanne"
    monkey.modifiers.new("Subdivision", "SUBSURF").levels = 1
    bpy.ops.object.shade_smooth()
    monkey.data.materials.append(material("Orange", (0.9, 0.35, 0.08, 1.0), 0.35))
    s = monkey.neurok
    s.velocity, s.angular_velocity, s.mass, s.restitution = MONKEY[1], MONKEY[2], 4.0, 0.35
    s.category, s.stiffness = "elastic", 0.5  # a jelly head (its open eye sockets would read as cloth)

    bpy.ops.mesh.primitive_cube_add(size=0.8, location=CRATE[0], rotation=(0.5, 0.2, 0.0))
    crate = bpy.context.active_object
    crate.name = "Crate"
    crate.data.materials.append(material("Blue", (0.1, 0.3, 0.8, 1.0), 0.3))
    s = crate.neurok
    s.velocity, s.angular_velocity, s.mass, s.friction = CRATE[1], CRATE[2], 10.0, 0.6
    s.category = "rigid"  # a wooden crate next to it

    look_at_camera(scene, (-0.5, -6.0, 2.5), (-0.5, 0.5, 1.4), lens=38)  # close on the action
    sun_and_sky(scene, rotation=(0.7, 0.2, 0.6), energy=3.5)
    return [monkey, crate]


def render(scene, output: Path):
    import bpy

    cycles_cpu(scene, samples=24, width=480, height=270)
    scene.render.image_settings.file_format = "PNG"
    frames = sorted(set(range(FRAMES[0], FRAMES[1] + 1, RENDER_EVERY)) | set(SHEET_FRAMES))
    paths = {}
    for i, frame in enumerate(frames, 1):
        scene.frame_set(frame)
        scene.render.filepath = str(output / "frames" / f"frame_{frame:04d}.png")
        bpy.ops.render.render(write_still=True)
        paths[frame] = Path(scene.render.filepath)
        print(f"rendered frame {frame} ({i}/{len(frames)})", flush=True)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, default=Path("out/demo"))
    output = parser.parse_args().output.resolve()
    isolate_user_folders()
    import bpy

    import neurok_blender

    neurok_blender.register()
    began = time.perf_counter()
    bodies = build_scene()
    bpy.ops.object.select_all(action="DESELECT")
    for obj in bodies:  # selected together: one solve, in which they meet each other and the plinth
        obj.select_set(True)
        obj.neurok.frame_start, obj.neurok.frame_end = FRAMES
    bpy.context.view_layer.objects.active = bodies[0]
    if bpy.ops.neurok.simulate() != {"FINISHED"}:
        raise SystemExit("simulating the demo scene failed")
    simulated = time.perf_counter() - began
    output.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(output / "demo.blend"))
    paths = render(bpy.context.scene, output)
    contact_sheet([paths[f] for f in SHEET_FRAMES], output / "contact_sheet.png")
    print(f"simulated in {simulated:.1f} s, rendered in {time.perf_counter() - began - simulated:.1f} s")
    print(f"frames:        {output / 'frames'}")
    print(f"contact sheet: {output / 'contact_sheet.png'}")
    print(f"scene:         {output / 'demo.blend'}")


if __name__ == "__main__":
    main()
