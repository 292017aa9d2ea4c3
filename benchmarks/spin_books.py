"""Fast spins: whether the learned coordinates keep their energy books when a body turns fast.

    .venv/bin/python -m benchmarks.spin_books [--weights W ...] [--tag T]

A spin loads every learned direction with its centrifugal pull, and where a map loses its inertia
away from rest (``benchmarks.latent_folds``) the spin's energy runs into the deformation. Two bodies,
each weights' own materials, ``integrator="auto"``, 24 fps: a 0.6 m square sheet of 3 cm triangles
(cloth) let go 1 m above the ground spinning about its normal at SPINS, 24 frames; a 0.3 x 0.1 x 0.02 m plate
(98 vertices) spun at PLATE_SPIN without gravity, 12 frames, as an elastic, an articulated and a
cloth body. Reported per run: the largest energy-balance error over the run's total energy (the
books: the stored energy, gravity's included, less the loads' work plus what was dissipated, against
the start), the steps, the largest |s| and the peak shape change (after the best rigid alignment,
over the diagonal), or that the run went non-finite.
Writes benchmarks/results/spin_books{_TAG}.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np

from benchmarks import write_results
from benchmarks.deformation import with_materials
from benchmarks.scene_pictures import sheet
from neurok_blender.core import Conditions, NeuROK, SimulationError
from neurok_blender.core.mesh import box_mesh, subdivided
from neurok_blender.core.neurok import WEIGHTS
from training.evaluation import shape_error

SPINS = (5.0, 10.0, 20.0, 40.0)  # rad/s about the sheet's normal
SHEET_SPACING = 0.03  # m: its triangles' side
PLATE_SPIN = (18.0, 12.0, 60.0)  # rad/s
PLATE_CATEGORIES = ("elastic", "articulated", "cloth")


def plate():
    v, f = box_mesh((0.3, 0.1, 0.02), (0.0, 0.0, 0.5))
    for _ in range(2):
        v, f = subdivided(v, f)
    return v, f


def run(neurok: NeuROK, name: str, mesh, conditions: Conditions) -> dict:
    v, f = mesh
    diagonal = float(np.linalg.norm(np.ptp(v, axis=0)))
    try:
        result = neurok.simulate(v, f, conditions)
    except SimulationError:
        return {"run": name, "finite": False}
    latent = result.coordinates[:, 6:]
    return {"run": name, "finite": True, "steps": result.steps,
            "books": float(np.abs(result.energy["balance"]).max() / result.energy["total"][0]),
            "largest_s": float(np.linalg.norm(latent, axis=1).max()) if latent.size else 0.0,
            "peak_shape_change": float(max(shape_error(p, v, diagonal) for p in result.positions))}


def rows_for(neurok: NeuROK) -> list[dict]:
    rows = [run(neurok, f"sheet at {spin:g} rad/s", sheet(0.6, 1.0, SHEET_SPACING),
                Conditions(frames=24, category="cloth", ground_height=0.0, angular_velocity=(0.0, 0.0, spin)))
            for spin in SPINS]
    rows += [run(neurok, f"plate, {category}", plate(),
                 Conditions(frames=12, category=category, gravity=(0.0, 0.0, 0.0), angular_velocity=PLATE_SPIN))
             for category in PLATE_CATEGORIES]
    for row in rows:
        print(row, flush=True)
    return rows


def cell(row: dict) -> str:
    if not row["finite"]:
        return "non-finite"
    return f"{100 * row['books']:.2g} % ({row['steps']} steps, max abs(s) {row['largest_s']:.1f}, " \
           f"shape {row['peak_shape_change']:.3f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, nargs="+", default=[WEIGHTS])
    parser.add_argument("--tag", default=None, help="results as spin_books_TAG")
    a = parser.parse_args()
    shipped = NeuROK.load().materials  # for checkpoints that carry none
    results = {f"{w.parent.name}/{w.name}": rows_for(with_materials(w, shipped)) for w in a.weights}
    names = [row["run"] for row in next(iter(results.values()))]
    lines = ["| run | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for index, name in enumerate(names):
        lines.append(f"| {name} | " + " | ".join(cell(rows[index]) for rows in results.values()) + " |")
    text = "Energy books over the total (largest over the run):\n\n" + "\n".join(lines)
    print(text)
    write_results("spin_books" + (f"_{a.tag}" if a.tag else ""), text, results=results)


if __name__ == "__main__":
    main()
