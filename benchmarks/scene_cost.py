"""Scenes of several bodies: what ten bodies cost against one, and how deep stacked jellies sink into
each other.

    .venv/bin/python -m benchmarks.scene_cost

Boxes of 0.3 m (the rigid ones Blender's 8-vertex cube, the jellies subdivided to 386 vertices,
category elastic on the shipped model) dropped from rest, 48 frames at 24 fps, one solver thread,
the model loaded before the clock starts: one alone, then ten in a loose pile (two layers of five,
the upper falling onto the lower), then five stacked with 0.1 m between them. Penetration is the
deepest the drawn mesh of a body goes below the top of the one under it, over all frames. Writes
benchmarks/results/scene_cost.{json,md}.
"""

import time

import numpy as np
import torch

from benchmarks import write_results
from neurok_blender.core import Conditions, NeuROK, simulate, simulate_scene
from neurok_blender.core.mesh import box_mesh

SIZE, FRAMES = 0.3, 48


def jelly_box(corner):
    """A 0.3 m box with each face split into 8 x 8 quads (386 vertices): a mesh the learned map can bend."""
    v, f = box_mesh((SIZE, SIZE, SIZE), corner)
    for _ in range(3):
        v, f = _split(v, f)
    return v, f


def _split(vertices, faces):
    """Each triangle into four at its edge midpoints (shared midpoints merged)."""
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    unique, index = np.unique(edges, axis=0, return_inverse=True)
    mids = len(vertices) + index.reshape(3, -1).T
    v = np.concatenate([vertices, vertices[unique].mean(1)])
    a, b, c = faces.T
    ab, bc, ca = mids.T
    return v, np.concatenate([np.stack(t, 1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])


def corners(count, layers=1):
    """Lowest corners of ``count`` boxes: rows of five 0.36 m apart, each layer 0.45 m above the last
    and shifted by a third of a box, so the upper boxes land on the edges of the lower ones."""
    per_layer = count // layers
    return [(0.36 * (i % per_layer) + 0.1 * (i // per_layer), 0.1 * (i // per_layer), 0.05 + 0.45 * (i // per_layer))
            for i in range(count)]


def timed(work):
    began = time.perf_counter()
    out = work()
    return out, time.perf_counter() - began


def penetration(results) -> float:
    """The deepest (m) any body's drawn mesh goes below the top of the one listed before it."""
    return max(float((results[i - 1].positions[:, :, 2].max(1) - results[i].positions[:, :, 2].min(1)).max())
               for i in range(1, len(results)))


def main():
    torch.set_num_threads(1)
    model = NeuROK.load()
    rows = []
    for category, mesh in (("rigid", lambda c: box_mesh((SIZE,) * 3, c)), ("elastic", jelly_box)):
        conditions = Conditions(frames=FRAMES, ground_height=0.0, category=category)
        one, seconds_one = timed(lambda: simulate(*mesh((0.0, 0.0, 0.05)), conditions, model=model))
        ten, seconds_ten = timed(lambda: simulate_scene([(*mesh(c), conditions) for c in corners(10, layers=2)],
                                                        model=model))
        stack, seconds_stack = timed(lambda: simulate_scene(
            [(*mesh((0.0, 0.0, 0.05 + 0.4 * i)), conditions) for i in range(5)], model=model))
        row = {"category": category, "vertices": len(mesh((0, 0, 0))[0]), "one_s": seconds_one, "ten_s": seconds_ten,
               "ten_over_one": seconds_ten / seconds_one, "stack_s": seconds_stack,
               "stack_penetration_m": penetration(stack),
               "finite": bool(all(np.isfinite(r.positions).all() for r in (one, *ten, *stack)))}
        rows.append(row)
        print(row, flush=True)
    lines = ["| bodies | vertices each | one alone | ten in a pile | ten / one | five stacked | deepest into the one below |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['category']} | {r['vertices']} | {r['one_s']:.1f} s | {r['ten_s']:.1f} s | "
                     f"{r['ten_over_one']:.1f} | {r['stack_s']:.1f} s | {1000 * r['stack_penetration_m']:.1f} mm |")
    text = "\n".join(lines)
    print(text)
    write_results("scene_cost", text, rows=rows)


if __name__ == "__main__":
    main()
