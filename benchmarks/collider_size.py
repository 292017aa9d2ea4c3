"""What a collider's size costs: a ball dropped onto terrains of 800 to 2 million triangles.

    .venv/bin/python -m benchmarks.collider_size [--sides 20 100 300 1000]

A 1k-vertex UV sphere (``neural_speed.sphere``), rigid and elastic (the shipped weights), dropped
from 0.5 m onto a 10 m x 10 m rolling terrain (a grid of ``side`` x ``side`` cells, two triangles
each, heights 0.05 sin 2x cos 1.5y m) with no ground plane, 48 frames at 24 fps, one thread, a
freshly loaded model each (its build included, the process's first simulation not timed). Reports
the seconds of a whole Simulate and of reading the collider (``obstacles.Obstacles``: its triangles
binned on a grid, once; the shorter of two reads), the steps, and the ball's lowest point at the end (on the terrain's
surface, whatever its size). Writes benchmarks/results/collider_size.{json,md}.
"""

import argparse

import numpy as np
import torch

from benchmarks import timed, write_results
from benchmarks.neural_speed import sphere
from neurok_blender.core import Collider, Conditions, NeuROK, simulate
from neurok_blender.core.obstacles import Obstacles


def terrain(side: int):
    """A 10 m rolling grid of side x side cells: vertices ((side + 1)^2, 3), faces (2 side^2, 3)."""
    xs = np.linspace(-5.0, 5.0, side + 1)
    x, y = np.meshgrid(xs, xs)
    vertices = np.stack([x.ravel(), y.ravel(), 0.05 * np.sin(2 * x.ravel()) * np.cos(1.5 * y.ravel())], -1)
    i = (np.arange(side)[:, None] * (side + 1) + np.arange(side)[None]).ravel()
    faces = np.concatenate([np.stack([i, i + 1, i + side + 2], -1), np.stack([i, i + side + 2, i + side + 1], -1)])
    return vertices, faces


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sides", type=int, nargs="+", default=[20, 100, 300, 1000])
    a = parser.parse_args()
    torch.set_num_threads(1)
    v, f = sphere(1000)
    simulate(v, f, Conditions(frames=2, category="elastic"), model=NeuROK.load())  # the first calls: not timed
    rows = []
    for side in a.sides:
        collider = Collider(*terrain(side))
        read = min(timed(lambda: Obstacles([collider], 24.0))[1] for _ in range(2))  # the first maps fresh memory
        for category in ("rigid", "elastic"):
            conditions = Conditions(frames=48, ground_height=None, category=category, colliders=[collider])
            model = NeuROK.load() if category != "rigid" else None
            result, seconds = timed(lambda: simulate(v, f, conditions, model=model))
            rows.append({"triangles": len(collider.faces), "category": category,
                         "simulate_s": seconds, "read_s": read, "steps": result.steps,
                         "lowest_m": float(result.positions[-1][:, 2].min())})
            print(rows[-1], flush=True)
    lines = ["| triangles | category | Simulate (s) | reading the collider (s) | steps | lowest point at the end (m) |",
             "|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {r['triangles']} | {r['category']} | {r['simulate_s']:.2f} | {r['read_s']:.2f} | {r['steps']} | "
              f"{r['lowest_m']:.3f} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    write_results("collider_size", text, threads=torch.get_num_threads(), rows=rows)


if __name__ == "__main__":
    main()
