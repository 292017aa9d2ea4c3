"""Scenes of several bodies: what ten bodies cost against one, and how deep stacked jellies sink into
each other.

    .venv/bin/python -m benchmarks.scene_cost

Boxes of 0.3 m (the rigid ones Blender's 8-vertex cube, the jellies subdivided to 386 vertices,
category elastic on the shipped model) dropped from rest, 48 frames at 24 fps, one solver thread,
in a process that has simulated another learned body before, each timing on a freshly loaded model
(loaded before the clock starts), so that each builds its mesh's coordinates once, as a first
Simulate of that mesh does: one alone, ten apart (two rows of five, 0.5 m between them, which never
meet: what the scene's machinery costs), then ten in a loose pile (two layers of five, the upper
falling onto the lower; how many of the upper five are still up on the lower at the end), then five
stacked with 0.1 m between them. Penetration is the
deepest any vertex of a body's drawn mesh lies inside another body's, measured to that one's surface,
over all frames; the lean, how far the top of the stack's centre strays sideways. Writes
benchmarks/results/scene_cost.{json,md}.
"""

import itertools

import numpy as np
import torch

from benchmarks import timed, write_results
from neurok_blender.core import Conditions, NeuROK, simulate, simulate_scene
from neurok_blender.core.mesh import box_mesh, subdivided, winding_number
from neurok_blender.core.obstacles import closest_on_triangles

SIZE, FRAMES = 0.3, 48


def jelly_box(corner, side: float = SIZE):
    """A cube of ``side`` (m) with each face split into 8 x 8 quads (386 vertices): a mesh the learned
    map can bend."""
    v, f = box_mesh((side, side, side), corner)
    for _ in range(3):
        v, f = subdivided(v, f)
    return v, f


def corners(count, layers=1):
    """Lowest corners of ``count`` boxes: rows of five 0.36 m apart, each layer 0.45 m above the last
    and shifted by a third of a box, so the upper boxes land on the edges of the lower ones."""
    per_layer = count // layers
    return [(0.36 * (i % per_layer) + 0.1 * (i // per_layer), 0.1 * (i // per_layer), 0.05 + 0.45 * (i // per_layer))
            for i in range(count)]


def apart(count):
    """Lowest corners of ``count`` boxes in rows of five, 0.5 m between neighbours: they never meet."""
    return [((SIZE + 0.5) * (i % 5), (SIZE + 0.5) * (i // 5), 0.05) for i in range(count)]


def penetration(results, faces) -> float:
    """The deepest (m) any vertex of a body lies inside another body's drawn mesh (winding number over
    1/2), measured to that mesh's surface, over all frames and pairs of bodies (``faces`` each's)."""
    deepest = 0.0
    for frame in range(len(results[0].positions)):
        at = [r.positions[frame].astype(np.float64) for r in results]
        for i, j in itertools.permutations(range(len(at)), 2):
            low, high = at[j].min(0), at[j].max(0)
            near = at[i][((at[i] >= low) & (at[i] <= high)).all(1)]  # within the other's bounding box
            if len(near) == 0:
                continue
            inside = near[winding_number(near, at[j], faces) > 0.5]
            if len(inside):
                deepest = max(deepest, float(surface_distance(inside, at[j], faces).max()))
    return deepest


def surface_distance(points, vertices, faces):
    """Each point's distance (m) to the nearest triangle of the mesh."""
    a, b, c = (np.tile(vertices[faces[:, k]], (len(points), 1)) for k in range(3))
    closest, _ = closest_on_triangles(np.repeat(points, len(faces), 0), a, b, c)
    return np.linalg.norm(closest - np.repeat(points, len(faces), 0), axis=1).reshape(len(points), -1).min(1)


def lean(results) -> float:
    """How far (m) the top body's centre strays sideways from where it started, at most over the frames."""
    top = results[-1].positions.astype(np.float64).mean(1)
    return float(np.linalg.norm(top[:, :2] - top[0, :2], axis=1).max())


def warm_up():
    """A learned body of another shape simulated once, so that no timing pays what a process pays on
    its first simulation (torch's lazy imports, first calls) and each pays its own build."""
    v, f = box_mesh((0.2, 0.25, 0.15), (0.0, 0.0, 0.05))
    simulate(*subdivided(v, f), Conditions(frames=4, ground_height=0.0, category="elastic"), model=NeuROK.load())


def main():
    torch.set_num_threads(1)
    warm_up()
    rows = []
    for category, mesh in (("rigid", lambda c: box_mesh((SIZE,) * 3, c)), ("elastic", jelly_box)):
        conditions = Conditions(frames=FRAMES, ground_height=0.0, category=category)
        models = [NeuROK.load() for _ in range(4)]  # each timing builds the mesh's coordinates anew
        one, seconds_one = timed(lambda: simulate(*mesh((0.0, 0.0, 0.05)), conditions, model=models[0]))
        spread, seconds_apart = timed(lambda: simulate_scene([(*mesh(c), conditions) for c in apart(10)],
                                                             model=models[1]))
        ten, seconds_ten = timed(lambda: simulate_scene([(*mesh(c), conditions) for c in corners(10, layers=2)],
                                                        model=models[2]))
        stack, seconds_stack = timed(lambda: simulate_scene(
            [(*mesh((0.0, 0.0, 0.05 + 0.4 * i)), conditions) for i in range(5)], model=models[3]))
        row = {"category": category, "vertices": len(mesh((0, 0, 0))[0]), "one_s": seconds_one,
               "apart_s": seconds_apart, "apart_over_one": seconds_apart / seconds_one, "ten_s": seconds_ten,
               "ten_over_one": seconds_ten / seconds_one, "ten_steps": ten[0].steps, "one_steps": one.steps,
               "pile_up": sum(int(r.positions[-1, :, 2].min() > SIZE - 0.02) for r in ten[5:]),
               "stack_s": seconds_stack,
               "stack_penetration_m": penetration(stack, mesh((0, 0, 0))[1]), "stack_lean_m": lean(stack),
               "finite": bool(all(np.isfinite(r.positions).all() for r in (one, *spread, *ten, *stack)))}
        rows.append(row)
        print(row, flush=True)
    lines = ["| bodies | vertices each | one alone | ten apart | apart / one | ten in a pile | pile / one | "
             "steps, pile / one | pile's top layer still up | five stacked | deepest into another | top's lean |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['category']} | {r['vertices']} | {r['one_s']:.1f} s | {r['apart_s']:.1f} s | "
                     f"{r['apart_over_one']:.1f} | {r['ten_s']:.1f} s | {r['ten_over_one']:.1f} | "
                     f"{r['ten_steps']} / {r['one_steps']} | {r['pile_up']} of 5 | {r['stack_s']:.1f} s | "
                     f"{1000 * r['stack_penetration_m']:.1f} mm | {1000 * r['stack_lean_m']:.0f} mm |")
    text = "\n".join(lines)
    print(text)
    write_results("scene_cost", text, rows=rows)


if __name__ == "__main__":
    main()
