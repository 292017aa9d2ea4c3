"""Energy drift of conservative neural rollouts: no damping, no plastic flow, no forces, no ground, 10 s.

    .venv/bin/python -m benchmarks.neural_energy CORPUS [--weights W] [--per-category 3] [--seconds 10]

Each held-out sequence's shape starts with its own initial velocity, spin and pull, falls freely
under gravity and wobbles on its learned coordinates; total energy (kinetic, potential, gravity)
should stay constant up to the integrator. Reported: the largest |E(t) - E(0)| over the run in
joules and relative to the largest kinetic energy (free fall makes that large, so the joules say
more for a body that barely wobbles), and whether the rollout stayed finite. Writes benchmarks/results/neural_energy.{json,md}.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks import write_results
from neurok_blender.core import NeuROK, SimulationError
from training.evaluation import pick_sequences
from training.corpus.conditions import conditions_of



def drift(neurok: NeuROK, sequence, seconds: float) -> dict:
    conditions = conditions_of(sequence, category=sequence.category, damping=0.0, plasticity=0.0, drag=0.0,
                               forces=[], ground_height=None, colliders=[], frames=int(seconds * sequence.fps) + 1)
    began = time.perf_counter()
    try:
        result = neurok.simulate(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions)
    except SimulationError as error:
        return {"finite": False, "error": str(error), "seconds": time.perf_counter() - began}
    energy = result.energy
    error = energy["total"] - energy["total"][0]
    kinetic = float(energy["kinetic"].max())
    return {"finite": True, "max_drift_J": float(np.abs(error).max()), "max_drift": float(np.abs(error).max() / kinetic),
            "max_kinetic_J": kinetic, "substeps": result.substeps,
            "reduced_coordinates": result.report.reduced_coordinates, "seconds": time.perf_counter() - began}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights)
    rows = []
    for category, sequences in pick_sequences(a.corpus, "heldout", a.per_category, spread=1).items():
        for sequence in sequences:
            rows.append({"category": category, "shape": sequence.shape, **drift(neurok, sequence, a.seconds)})
            print(rows[-1], flush=True)
    lines = [f"| category | shape | k_q | max drift over {a.seconds:g} s (J) | / max kinetic energy | finite |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        if r["finite"]:
            lines.append(f"| {r['category']} | {r['shape']} | {r['reduced_coordinates']} | {r['max_drift_J']:.2e} | "
                         f"{r['max_drift']:.2e} | yes |")
        else:
            lines.append(f"| {r['category']} | {r['shape']} | - | - | - | no: {r['error']} |")
    text = "\n".join(lines)
    print(text)
    write_results("neural_energy", text, rows=rows)


if __name__ == "__main__":
    main()
