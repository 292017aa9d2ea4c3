"""Bounciness against its meaning: the coefficient of restitution e, so a body dropped from h rises back
to e^2 h (cloth: not at all).

    .venv/bin/python -m benchmarks.bounciness [--restitutions 0 0.3 0.6]

Per category and e, with the shipped model: a 1 m cube dropped with its bottom 1 m above the ground
(articulated: two 0.45 m slabs side by side, one mesh; cloth: a flat sheet about 1 m wide, of triangles 0.125 m on a side),
26 frames at 24 fps; the rise of the centre of mass over the height where it first touched, after
the lowest point of its fall, over the 1 m drop. Writes benchmarks/results/bounciness.{json,md}.
"""

import argparse
import time

import numpy as np
import torch

from benchmarks import write_results
from neurok_blender.core import Conditions, NeuROK
from neurok_blender.core.mesh import box_mesh
from training.shapes.sheets import lattice_sheet

CATEGORIES = ("rigid", "elastic", "continuum", "articulated", "cloth")
DROP = 1.0  # m, from the first touch's height


def body(category: str):
    """Vertices and triangles of the dropped body, its lowest point DROP above the ground."""
    if category == "cloth":
        v, f = lattice_sheet(lambda p: np.abs(p).max(1) < 0.5, 0.55, 0.125)
        return v + [0.0, 0.0, DROP], f
    if category == "articulated":
        a, fa = box_mesh((0.45, 1.0, 1.0), (-0.5, -0.5, DROP))
        b, fb = box_mesh((0.45, 1.0, 1.0), (0.05, -0.5, DROP))
        return np.concatenate([a, b]), np.concatenate([fa, fb + len(a)])
    return box_mesh((1.0, 1.0, 1.0), (-0.5, -0.5, DROP))


def rise(neurok: NeuROK, category: str, restitution: float) -> float:
    v, f = body(category)
    result = neurok.simulate(v, f, Conditions(frames=26, category=category, ground_height=0.0,
                                              restitution=restitution))
    height = result.pose["translation"][:, 2] if "translation" in result.pose else result.positions.mean(1)[:, 2]
    landed = int(np.argmin(height[:20]))
    return float((height[landed:].max() - (height[0] - DROP)) / DROP)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restitutions", type=float, nargs="+", default=[0.0, 0.3, 0.6])
    a = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the add-on runs it (preferences.AUTO_THREADS)
    neurok = NeuROK.load()
    rows = []
    for category in CATEGORIES:
        began = time.perf_counter()
        rises = [rise(neurok, category, e) for e in a.restitutions]
        rows.append({"category": category, "rises": rises, "seconds": time.perf_counter() - began})
        print(rows[-1], flush=True)
    head = " | ".join(f"e = {e:g}" for e in a.restitutions)
    lines = [f"| category | {head} |", "|---|" + "---:|" * len(a.restitutions),
             "| target (cloth: 0) | " + " | ".join(f"{e * e:.3f}" for e in a.restitutions) + " |"]
    lines += [f"| {row['category']} | " + " | ".join(f"{r:.3f}" for r in row["rises"]) + " |" for row in rows]
    table = "\n".join(lines)
    print(table)
    write_results("bounciness", table, restitutions=a.restitutions, rows=rows)


if __name__ == "__main__":
    main()
