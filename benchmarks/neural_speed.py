"""How fast the neural solver is, where its time goes, and what the quadratic decoder costs in accuracy.

    .venv/bin/python -m benchmarks.neural_speed [--weights W] [--frames 120] [--sizes 1000 3000 10000 100000]

For UV spheres of about 1k, 3k, 10k and 100k vertices dropped onto the ground for 120 frames at 24 fps:
seconds to encode the mesh and build its learned coordinates (encoder, active subspace, decoder
expansion, mass points), to roll out (solver steps, decoding every frame included), to simulate the
same mesh again (a second click: its coordinates are kept), and Blender's
own Cloth and Soft Body bakes of the same mesh and frames in the same run (``training/reference/cloth.py``;
Soft Body with its defaults, goal off, onto a collision plane; bpy 5.0.1), as ratios. Baking into shape keys is the add-on's part and not timed here.
Every timing is the shortest of three runs (one for a run of 10 s or more): a run on a busy machine
is slowed, never sped up, so the least is the closest to the solver's own cost.
Then the quadratic expansion against the network itself on the same shape: relative difference of
the decoded motion at |s| = 0.5, 1, 2, 3 prior standard deviations.
Writes benchmarks/results/neural_speed.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks import timed, write_results
from training.shapes.solids import uv_sphere
from neurok_blender.core import Conditions, NeuROK
from neurok_blender.core.neural import DecoderMotions, QuadraticMotions



REPEATS = 3  # each timing the best of three: a run on a shared machine is slowed, never sped up
SINGLE_RUN_S = 10.0  # a run this long is timed once


def sphere(vertices: int):
    """A UV sphere of radius 0.3 m with about ``vertices`` vertices, its lowest point 0.5 m up."""
    rings = max(4, int(round(np.sqrt(vertices / 2))))
    v, f = uv_sphere(rings, int(round(vertices / rings)))
    return v * 0.3 + [0.0, 0.0, 0.8], f


def shortest(run, repeats: int = REPEATS):
    """The quickest of ``repeats`` calls of ``run``, which returns (..., seconds it timed) each; one
    call when the first times SINGLE_RUN_S or longer."""
    runs = [run()]
    while len(runs) < repeats and runs[0][-1] < SINGLE_RUN_S:
        runs.append(run())
    return min(runs, key=lambda r: r[-1])


def time_neural(weights, v, f, frames: int) -> dict:
    """A click on a mesh the model has not seen (each timing on a freshly loaded model, so nothing of
    the mesh is kept): the build alone, then the whole simulate; then simulate again on the same mesh
    (its coordinates kept by NeuROK.body, as a second click on the same object). Each the best of
    REPEATS (``shortest``)."""
    conditions = Conditions(frames=frames, fps=24.0, ground_height=0.0, category="elastic")

    def build():
        neurok = NeuROK.load(weights)
        return timed(lambda: neurok.body(v, f, conditions, "elastic")[1])

    def click():
        neurok = NeuROK.load(weights)
        return (neurok, *timed(lambda: neurok.simulate(v, f, conditions)))

    report, body = shortest(build)
    neurok, result, total = shortest(click)
    _, again = shortest(lambda: timed(lambda: neurok.simulate(v, f, conditions)))
    return {"build_s": body, "simulate_s": total, "rollout_s": total - body, "again_s": again,
            "substeps": result.substeps, "steps_per_frame": result.steps / (frames - 1),
            "reduced_coordinates": report.reduced_coordinates,
            "finite": bool(np.isfinite(result.positions).all())}


def time_cloth(v, f, frames: int) -> float:
    from training.reference.cloth import simulate_cloth

    return shortest(lambda: timed(lambda: simulate_cloth(v, f, conditions=Conditions(frames=frames, fps=24.0,
                                                                                       ground_height=0.0))))[-1]


def time_soft_body(v, f, frames: int) -> float:
    """Blender's Soft Body with its defaults (goal off: a free body) dropped on a ground plane with a
    Collision modifier, stepped frame by frame (which bakes its cache), in the same process; each
    repeat in a new scene."""
    import bpy

    def bake():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, frames

        def mesh_object(name, vertices, faces):
            mesh = bpy.data.meshes.new(name)
            mesh.from_pydata(np.asarray(vertices, dtype=np.float64).tolist(), [], np.asarray(faces).tolist())
            obj = bpy.data.objects.new(name, mesh)
            scene.collection.objects.link(obj)
            return obj

        body = mesh_object("body", v, f)
        modifier = body.modifiers.new("Softbody", "SOFT_BODY")
        modifier.settings.use_goal = False
        modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, frames
        ground = mesh_object("ground", [[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], [[0, 1, 2], [0, 2, 3]])
        ground.modifiers.new("Collision", "COLLISION")
        return timed(lambda: [scene.frame_set(frame) for frame in range(1, frames + 1)])

    return shortest(bake)[-1]


def expansion_error(neurok: NeuROK, v, f, radii=(0.5, 1.0, 2.0, 3.0), directions: int = 8) -> dict:
    """Mean over random directions of |m_quadratic(s) - m(s)| / |m(s) - m(0)| at each radius."""
    kmap, _ = neurok.body(v, f, Conditions(category="elastic"), "elastic")
    if kmap is None:
        return {}
    quadratic: QuadraticMotions = kmap.motions
    exact: DecoderMotions = quadratic.exact
    generator = torch.Generator().manual_seed(0)
    k = kmap.block  # the motions are one mirror block's
    base = torch.cat(exact(torch.zeros(1, k, dtype=torch.float64)), -1)
    out = {}
    for radius in radii:
        errors = []
        for _ in range(directions):
            s = torch.randn(1, k, dtype=torch.float64, generator=generator)
            s = s / s.norm() * radius
            with torch.no_grad():
                truth, approx = torch.cat(exact(s), -1), torch.cat(quadratic(s), -1)
            errors.append(float((approx - truth).norm() / (truth - base).norm()))
        out[str(radius)] = float(np.mean(errors))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 100000])
    parser.add_argument("--cloth-max", type=int, default=20000,
                        help="Blender's Cloth and Soft Body bakes up to this many vertices")
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights)
    neurok.simulate(*sphere(500), Conditions(frames=2, category="elastic"))  # first calls of torch kernels: not timed
    rows = []
    for size in a.sizes:
        v, f = sphere(size)
        row = {"vertices": len(v), **time_neural(a.weights, v, f, a.frames)}
        if len(v) <= a.cloth_max:
            row["blender_cloth_s"] = time_cloth(v, f, a.frames)
            row["cloth_over_neural"] = row["blender_cloth_s"] / row["simulate_s"]
            row["blender_soft_body_s"] = time_soft_body(v, f, a.frames)
            row["soft_body_over_neural"] = row["blender_soft_body_s"] / row["simulate_s"]
        rows.append(row)
        print(row, flush=True)
    accuracy = expansion_error(neurok, *sphere(2000))
    print("quadratic vs network, relative motion error by |s|:", accuracy)
    lines = ["| vertices | build (s) | rollout (s) | total (s) | again (s) | steps/frame (on impact) | k_q | Blender Cloth (s) "
             "| Cloth / neural | Blender Soft Body (s) | Soft Body / neural |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cloth = (f"{r['blender_cloth_s']:.1f} | {r['cloth_over_neural']:.2f} | {r['blender_soft_body_s']:.1f} | "
                 f"{r['soft_body_over_neural']:.2f}" if "blender_cloth_s" in r else "- | - | - | -")
        lines.append(f"| {r['vertices']} | {r['build_s']:.1f} | {r['rollout_s']:.1f} | {r['simulate_s']:.1f} | "
                     f"{r['again_s']:.1f} | {r['steps_per_frame']:.1f} ({r['substeps']}) | {r['reduced_coordinates']} | {cloth} |")
    lines += ["", "Quadratic decoder against the network (relative error of the decoded motion):", "",
              "| s | " + " | ".join(accuracy) + " |", "|---|" + "---:|" * len(accuracy) + "",
              "| error | " + " | ".join(f"{e:.3f}" for e in accuracy.values()) + " |"]
    text = "\n".join(lines)
    print(text)
    write_results("neural_speed", text, threads=torch.get_num_threads(), frames=a.frames, rows=rows,
                  expansion_error=accuracy)


if __name__ == "__main__":
    main()
