"""How fast an elastic ball rebounds from the ground: the reference simulator against the neural solver.

    .venv/bin/python -m benchmarks.elastic_bounce [--weights W]

A ball (radius 0.15 m, 1 kg) dropped at 2 m/s onto a dead ground (restitution 0, the corpus's reading
of MuJoCo's critically damped contact, ``training/corpus/conditions.py``) gives its impact back only
through its own elasticity. Reported per Young's modulus: the rebound speed of the centre of mass over
its impact speed, for the MuJoCo flex FEM reference (``training/reference/elastic.py``), the neural
solver with the shipped elastic material, the same with the material's contact restitution set to 0
(what its learned coordinates alone store, ``neurok_blender/core/neurok.py: contact_restitution``),
and the rigid solver (0: nothing to give back); per flex damping too (the reference's damping is
stiffness-proportional, beta K; the corpus draws beta from 0.5-5 ms), which the neural solver takes
as its damping scale (``training/reference/scales.py``).
Writes benchmarks/results/elastic_bounce.{json,md}.
"""

import argparse
import dataclasses
import time

import numpy as np

from benchmarks import write_results
from neurok_blender.core import Conditions, NeuROK
from training.reference.elastic import ElasticMaterial, simulate_elastic
from training.reference.scales import material_conditions
from training.shapes.solids import uv_sphere
from training.shapes.tetra import layered_tets

YOUNGS = (1e4, 5e4, 4e5)  # Pa: the held-out elastic sequences span 10-390 kPa
FLEX_DAMPINGS = (5e-4, 2e-3, 5e-3)  # s: the corpus's range and the default
RADIUS, SPEED, FPS, FRAMES = 0.15, 2.0, 480.0, 96


def rebound(heights: np.ndarray) -> float:
    """Largest upward speed after the fastest fall, over that fall's speed."""
    vz = np.gradient(heights) * FPS
    impact = int(np.argmin(vz))
    return float(vz[impact:].max() / -vz[impact])


def measure(neurok: NeuROK, vertices, faces, young: float, damping: float) -> dict:
    material = ElasticMaterial(young=young, damping=damping)
    conditions = Conditions(frames=FRAMES, fps=FPS, velocity=(0.0, 0.0, -SPEED), ground_height=0.0,
                            friction=material.friction, restitution=None)
    row = {"young": young, "damping": damping}
    began = time.perf_counter()
    # the corpus's tets (layered, deterministic): TetWild's differ run to run, and so did the rebound
    # (0.82 / 0.84 / 0.72 at 10 kPa and 0.5 ms in three runs of one process)
    tets = layered_tets(vertices, faces, layers=2)
    row["reference"] = rebound(simulate_elastic(vertices, faces, material, conditions, tets=tets).center[:, 2])
    neural = dataclasses.replace(conditions, category="elastic", **material_conditions("elastic", vars(material)))
    dead = dataclasses.replace(neurok.materials["elastic"], restitution=0.0)
    for name, model, c in (("neural", neurok, neural),
                           ("neural, dead contact", NeuROK(neurok.model, {**neurok.materials, "elastic": dead}), neural),
                           ("rigid only", neurok, dataclasses.replace(conditions, category="rigid"))):
        row[name] = rebound(model.simulate(vertices, faces, c).pose["translation"][:, 2])
    row["seconds"] = time.perf_counter() - began
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default=None, help="default: the shipped weights")
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights)
    vertices, faces = uv_sphere(12, 16)
    vertices = vertices * RADIUS + [0.0, 0.0, RADIUS + 0.01]
    rows = []
    for young in YOUNGS:
        for damping in FLEX_DAMPINGS:
            rows.append(measure(neurok, vertices, faces, young, damping))
            print(rows[-1], flush=True)
    names = ("reference", "neural", "neural, dead contact", "rigid only")
    lines = ["| Young's modulus (kPa) | flex damping (ms) | " + " | ".join(names) + " |",
             "|---:|---:|" + "---:|" * len(names)]
    lines += [f"| {r['young'] / 1e3:g} | {r['damping'] * 1e3:g} | " + " | ".join(f"{r[n]:.2f}" for n in names) + " |"
              for r in rows]
    error = np.mean([abs(r["neural"] - r["reference"]) for r in rows])
    text = "\n".join(lines) + f"\n\nMean |neural - reference|: {error:.3f}"
    print(text)
    write_results("elastic_bounce", text, rows=rows, material=dataclasses.asdict(neurok.materials["elastic"]))


if __name__ == "__main__":
    main()
