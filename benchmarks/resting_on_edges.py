"""Boxes resting on other boxes' edges: what point contact at a mesh's vertices holds up.

    .venv/bin/python -m benchmarks.resting_on_edges

A body meets another mesh (a collider, another body) at its contact points, the vertices of a
low-poly mesh: where two meshes meet edge on edge, or a face rests over another's edge, no vertex
may lie on the other, and the support is not where it should be. Five cases, each on Blender's
8-vertex box and on the same box subdivided 1-3 times (26, 98, 386 vertices; each split of a
triangle into four halves the vertex spacing), rigid and as jellies (category elastic on the shipped
model), 48 frames at 24 fps on a ground at z = 0:

- crossed planks: a 1.0 x 0.1 x 0.1 m plank dropped from 2 cm onto an equal one lying crosswise;
- over a box's edge: a 0.3 m box dropped from 5 cm onto an equal one, a third of it past the edge
  (its centre of mass 5 cm inside it);
- over a collider's edge: the same onto a collider box (thickness 5 mm);
- across two boxes: dropped from 5 cm across two boxes 6 cm apart, a third past their far edges;
- the pile's top layer: ``scene_cost``'s ten boxes, five dropped 15 cm across five.

Each row says how far (m) the dropped box's lowest point ends above the top it should rest on
(0.1 or 0.3 m, less its contact's few millimetres: negative, it passed through or fell off), and
for the pile how many of the five stay up. Writes benchmarks/results/resting_on_edges.{json,md}.
"""

import dataclasses

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.scene_cost import corners
from neurok_blender.core import Conditions, NeuROK, simulate, simulate_scene
from neurok_blender.core.mesh import box_mesh, subdivided
from neurok_blender.core.options import Collider

FRAMES, SIDE = 48, 0.3
RIGID = dict(frames=FRAMES, ground_height=0.0, category="rigid")
CATEGORIES = ("rigid", "elastic")


def box(size, corner, splits):
    v, f = box_mesh(size, corner)
    for _ in range(splits):
        v, f = subdivided(v, f)
    return v, f


def lowest_end(result) -> float:
    return float(result.positions[-1, :, 2].min())


def cases(splits, category="rigid", model=None):
    """(name, the dropped box's lowest point at the end less the top it should rest on (m)) per case,
    and the pile's boxes still up, for boxes of ``category`` (a learned one on ``model``)."""
    body = Conditions(**dict(RIGID, category=category))
    together = lambda bodies: simulate_scene(bodies, model=model)
    plank = lambda size, corner: box(size, corner, splits)
    crossed = together([(*plank((1.0, 0.1, 0.1), (-0.5, -0.05, 0.0)), body),
                        (*plank((0.1, 1.0, 0.1), (-0.05, -0.5, 0.12)), body)])
    cube = lambda corner: box((SIDE,) * 3, corner, splits)
    over_box = together([(*cube((0.0, 0.0, 0.0)), body), (*cube((0.0, 0.1, 0.35)), body)])
    table = Collider(*box_mesh((SIDE,) * 3), thickness=0.005)
    over_collider = simulate(*cube((0.0, 0.1, 0.355)), dataclasses.replace(body, colliders=[table]), model=model)
    across = together([(*cube((0.0, 0.0, 0.0)), body), (*cube((0.36, 0.0, 0.0)), body),
                       (*cube((0.1, 0.1, 0.35)), body)])
    pile = together([(*cube(c), body) for c in corners(10, layers=2)])
    rows = {"crossed planks": lowest_end(crossed[1]) - 0.1, "over a box's edge": lowest_end(over_box[1]) - SIDE,
            "over a collider's edge": lowest_end(over_collider) - SIDE,
            "across two boxes": lowest_end(across[2]) - SIDE}
    up = sum(lowest_end(r) > SIDE - 0.02 for r in pile[5:])
    return rows, up


def main():
    torch.set_num_threads(1)
    model = NeuROK.load()
    runs = []
    for category in CATEGORIES:
        for splits in range(4):
            rows, up = cases(splits, category, model)
            runs.append({"category": category, "vertices": len(box((SIDE,) * 3, (0, 0, 0), splits)[0]),
                         "ends_above_m": rows, "pile_up": up})
            print(runs[-1], flush=True)
    names = list(runs[0]["ends_above_m"])
    lines = ["| boxes | vertices | " + " | ".join(names) + " | pile's top layer still up |",
             "|---|---:|" + "---:|" * (len(names) + 1)]
    for run in runs:
        cells = [f"{1000 * run['ends_above_m'][n]:+.0f} mm" for n in names]
        lines.append(f"| {run['category']} | {run['vertices']} | " + " | ".join(cells) + f" | {run['pile_up']} of 5 |")
    text = "\n".join(lines)
    print(text)
    write_results("resting_on_edges", text, runs=runs, finite=bool(np.isfinite([v for r in runs for v in r["ends_above_m"].values()]).all()))


if __name__ == "__main__":
    main()
