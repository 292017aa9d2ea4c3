"""Scenes in pictures: several bodies, colliders and pins on the shipped model, each at four times.

    .venv/bin/python -m benchmarks.scene_pictures [--out docs/scenes/scenes.jpg]      # about 2 min

Rows: five jelly cubes dropped onto each other, two jellies thrown at each other, an elastic ball
rolling down a plank tilted by 15 degrees (a collider) and off its end, a cloth sheet dropped on a
table (a collider), a sheet pinned at two corners. Columns: 0, 0.5, 1 and 2 s. Each row is framed
on all of its frames, so the camera stays put along it. Writes the contact sheet (JPEG).
"""

import argparse
import math
from pathlib import Path

import numpy as np

from benchmarks.scene_cost import jelly_box
from neurok_blender.core import Collider, Conditions, NeuROK, simulate_scene
from neurok_blender.core.mesh import box_mesh
from training.shapes.sheets import lattice_sheet
from training.shapes.solids import uv_sphere

TIMES = (0.0, 0.5, 1.0, 2.0)  # s
FPS = 24


PLANK_LIFT = 0.5  # m: the tilted plank's top surface's centre above the ground


def tilted_plank(angle: float, length: float = 1.6, width: float = 0.5, thickness: float = 0.05,
                 lift: float = PLANK_LIFT):
    """A plank tilted by ``angle`` about y, falling along +x, its top surface's centre ``lift`` up."""
    v, f = box_mesh((length, width, thickness), (-length / 2, -width / 2, -thickness))
    c, s = math.cos(angle), math.sin(angle)
    turn = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return v @ turn.T + [0.0, 0.0, lift], f, turn


def sheet(size: float, height: float, spacing: float = 0.06):
    """A flat square of cloth ``size`` m across at ``height``, of triangles ``spacing`` m on a side."""
    v, f = lattice_sheet(lambda p: np.abs(p).max(1) < size / 2, size / 2 + 0.05, spacing)
    return v + [0.0, 0.0, height], f


def scenes() -> dict:
    """Each scene as (bodies: [(vertices, faces, Conditions)], colliders)."""
    frames = int(TIMES[-1] * FPS) + 1
    common = dict(frames=frames, fps=FPS, ground_height=0.0)
    elastic = dict(category="elastic", **common)
    plank = tilted_plank(math.radians(15))
    start = plank[2] @ np.array([-0.55, 0.0, 0.16]) + [0.0, 0.0, PLANK_LIFT]  # near its top, just over it
    ball = uv_sphere(12, 16)
    table = box_mesh((0.6, 0.6, 0.5), (-0.3, -0.3, 0.0))
    hanging = sheet(0.8, 1.0)
    corners = [int(np.argmax(hanging[0] @ [1.0, 1.0, 0.0])), int(np.argmax(hanging[0] @ [-1.0, 1.0, 0.0]))]
    planks = [Collider(plank[0], plank[1], friction=1.0, thickness=0.01, name="plank")]
    tables = [Collider(*table, friction=0.6, thickness=0.01, name="table")]
    return {
        "five jellies stacked": ([(*jelly_box((0.0, 0.0, 0.05 + 0.4 * i)), Conditions(**elastic)) for i in range(5)], []),
        "two jellies thrown at each other": (
            [(*jelly_box((-0.8, -0.15, 0.05)), Conditions(velocity=(2.5, 0.0, 2.0), **elastic)),
             (*jelly_box((0.5, -0.15, 0.05)), Conditions(velocity=(-2.5, 0.0, 2.0), **elastic))], []),
        "a ball down a plank": ([(ball[0] * 0.15 + start, ball[1], Conditions(friction=1.0, colliders=planks, **elastic))],
                                planks),
        "a sheet dropped on a table": ([(*sheet(1.0, 0.7), Conditions(category="cloth", colliders=tables,
                                                                      **common))], tables),
        "a sheet pinned at two corners": ([(*hanging, Conditions(category="cloth", pins=corners,
                                                                 **common))], []),
    }


def render(destination: Path) -> None:
    from tools.build_extension import isolate_user_folders
    from tools.stage import mesh_sheet

    isolate_user_folders()
    neurok = NeuROK.load()
    states, framings = [], []
    for name, (bodies, colliders) in scenes().items():
        results = simulate_scene(bodies, model=neurok)
        frames = [round(t * FPS) for t in TIMES]
        obstacles = [{"kind": "mesh", "vertices": c.vertices, "faces": c.faces} for c in colliders]
        framing = np.concatenate([r.positions[f] for r in results for f in frames]
                                 + [c.vertices for c in colliders]).astype(np.float64)
        for f in frames:
            states.append(([(r.positions[f].astype(np.float64), body[1]) for r, body in zip(results, bodies)],
                           obstacles))
            framings.append(framing)
        print(f"{name}: simulated, {results[0].steps} steps", flush=True)
    mesh_sheet(states, destination, columns=len(TIMES), framings=framings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/scenes/scenes.jpg"))
    a = parser.parse_args()
    render(a.out)
    print(f"scenes: {a.out}")


if __name__ == "__main__":
    main()
