"""Where the neural solver's time goes, click to baked shape keys, for one mesh.

    .venv/bin/python -m benchmarks.neural_profile [--vertices 10000] [--frames 120]

The speed benchmark's sphere (``neural_speed.sphere``) dropped onto the ground, run once under
cProfile; each phase is the cumulative time of the functions that make it (nested phases are shown
indented and are part of the line above). The bake writes the frames as shape keys through the
add-on's own ``bake_shape_keys`` into a bpy mesh. cProfile adds some overhead to Python-heavy parts;
the untraced total is given too. Writes benchmarks/results/neural_profile.{json,md}.
"""

import argparse
import cProfile
import pstats
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.neural_speed import sphere
from neurok_blender.core import Conditions, NeuROK

# (label, indent, (file, function) pairs whose cumulative times make the phase), in the order of a run
PHASES = [
    ("build the body", 0, [("neurok.py", "body")]),
    ("prior encoder", 1, [("model.py", "prior")]),
    ("active subspace", 1, [("reduction.py", "active_subspace")]),
    ("mass points (inside test)", 1, [("mass_points.py", "material_points")]),
    ("decoder expansion and point fields", 1, [("neural.py", "attach")]),
    ("initial state (fit)", 0, [("initial.py", "fit_initial_state")]),
    ("roll out", 0, [("trajectory.py", "rollout")]),
    ("solver steps", 1, [("trajectory.py", "advance_frame")]),
    ("mass points' sums (body frame)", 2, [("neural.py", "mass_terms")]),
    ("acting points' x and J", 2, [("neural.py", "jacobian")]),
    ("the potential's gradient", 2, [("neural.py", "potential_gradient")]),
    ("contact forces at the step's start", 2, [("contact.py", "plane_forces")]),
    ("the implicit solve (Newton, with the potential's Hessian)", 2, [("dynamics.py", "implicit_change")]),
    ("mass-matrix solves", 2, [("dynamics.py", "solve")]),
    ("energy checks", 1, [("dynamics.py", "energies")]),
    ("decode the output vertices", 1, [("trajectory.py", "keep"), ("trajectory.py", "points")]),
]


def cumulative(stats: pstats.Stats, functions) -> float:
    """Cumulative seconds (pstats' ct: each call counted once, recursion included once) of ``functions``."""
    return sum(ct for (path, _, name), (_, _, _, ct, _) in stats.stats.items()
               if any(path.endswith(f"/core/{file}") and name == function for file, function in functions))


def time_bake(positions: np.ndarray, faces: np.ndarray) -> float:
    import bpy

    import neurok_blender
    from neurok_blender.bake import bake_shape_keys

    neurok_blender.register()
    mesh = bpy.data.meshes.new("profile")
    mesh.from_pydata(positions[0].tolist(), [], faces.tolist())
    obj = bpy.data.objects.new("profile", mesh)
    bpy.context.scene.collection.objects.link(obj)
    began = time.perf_counter()
    bake_shape_keys(obj, positions, 1)
    return time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--vertices", type=int, default=10000)
    parser.add_argument("--frames", type=int, default=120)
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights)
    v, f = sphere(a.vertices)
    conditions = Conditions(frames=a.frames, fps=24.0, ground_height=0.0, category="elastic")
    neurok.simulate(*sphere(500), Conditions(frames=2, category="elastic"))  # first calls of torch kernels
    began = time.perf_counter()
    neurok.simulate(v, f, conditions)
    untraced = time.perf_counter() - began
    profiler = cProfile.Profile()
    began = time.perf_counter()
    result = profiler.runcall(NeuROK.load(a.weights).simulate, v, f, conditions)  # a fresh model: it builds the mesh anew
    traced = time.perf_counter() - began
    stats = pstats.Stats(profiler)
    bake = time_bake(result.positions, f)
    rows = [{"phase": label, "indent": indent, "seconds": cumulative(stats, names)} for label, indent, names in PHASES]
    rows.append({"phase": "bake as shape keys (Blender)", "indent": 0, "seconds": bake})
    lines = [f"{len(v)} vertices, {a.frames} frames, {result.substeps} steps a frame, k_q = "
             f"{result.report.reduced_coordinates}, {torch.get_num_threads()} torch thread(s): "
             f"{untraced:.1f} s untraced, {traced:.1f} s under cProfile, bake {bake:.1f} s", "",
             "| phase | seconds | share of the traced run |", "|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {'&nbsp;&nbsp;' * r['indent']}{r['phase']} | {r['seconds']:.2f} | "
                     f"{100 * r['seconds'] / traced:.0f} % |")
    text = "\n".join(lines)
    print(text)
    write_results("neural_profile", text, vertices=len(v), frames=a.frames, substeps=result.substeps,
                  untraced_s=untraced, traced_s=traced, rows=rows)


if __name__ == "__main__":
    main()
