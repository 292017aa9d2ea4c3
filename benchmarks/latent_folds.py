"""Where the learned coordinates stop carrying mass: how far from rest a body's map keeps its inertia.

    .venv/bin/python -m benchmarks.latent_folds CORPUS [--weights W ...] [--per-category 4]
                                               [--expansion quadratic|exact] [--radii 1 2 3 4 6 8] [--tag T]

The solver's latent inertia is M_ss(s) = J_s(s)^T m J_s(s) + A (the mass points' sum and the
inertia floor, ``neural.py``). Where a decoder flattens, past the deformations it was trained on,
some direction's M_ss falls towards zero, and any load along it (a spin's centrifugal pull) sets s
racing: its least eigenvalue bounds the latent speed a given kinetic energy buys,
|s_dot| <= sqrt(2 T / lambda_min). For each held-out shape, its body map as the solver builds it
(``NeuROK.body`` at the sequence's conditions), lambda_min(M_ss) over the sphere |s| = t at RADII (or --radii),
over mu (the mass an average direction moves at rest), searched from the rest eigenvectors and
RANDOM_DIRECTIONS random ones, then by projected gradient descent on the sphere (an upper bound of
the least). The fold radius is the first radius where it falls below FOLD of the floor (the latent
speed then passes sqrt(1 / FOLD) times the floor's bound); the wall S (``neural.wall_radius``) is
where the potential starts holding s back. Reported per weights and category: the median lambda_min
/ mu per radius, the median fold radius, the wall, and how many shapes fold inside their wall.
Writes benchmarks/results/latent_folds{_TAG}.{json,md}.
"""

import argparse
import dataclasses
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.deformation import with_materials
from neurok_blender.core import NeuROK
from neurok_blender.core.neural import MASS_FLOOR
from neurok_blender.core.neurok import WEIGHTS
from training.evaluation import pick_sequences, replay_conditions

RADII = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0)  # prior standard deviations
RANDOM_DIRECTIONS = 64
DESCENT_STEPS = 25
FOLD = 0.1  # of the floor MASS_FLOOR mu


def least_inertia(kmap, s: torch.Tensor) -> torch.Tensor:
    """lambda_min(M_ss(s)) for reduced coordinates s (k,), differentiable in s."""
    q = torch.cat([kmap.rest_coordinates()[:, :6], s[None]], 1)
    latent = kmap.mass_terms(q, torch.zeros_like(q)).mass_matrix[0, 6:, 6:]
    return torch.linalg.eigvalsh(0.5 * (latent + latent.T))[0]


def least_on_sphere(kmap, radius: float, starts: torch.Tensor) -> float:
    """The least lambda_min(M_ss) found on |s| = radius: the best of ``starts`` (unit rows), refined by
    projected gradient descent."""
    with torch.no_grad():
        values = torch.stack([least_inertia(kmap, radius * u) for u in starts])
    u = starts[int(values.argmin())].clone()
    best = float(values.min())
    step = 0.1
    for _ in range(DESCENT_STEPS):
        u.requires_grad_(True)
        with torch.enable_grad():
            value = least_inertia(kmap, radius * u)
            (gradient,) = torch.autograd.grad(value, u)
        with torch.no_grad():
            tangent = gradient - (gradient @ u) * u  # along the sphere
            trial = u - step * tangent / tangent.norm().clamp(min=1e-300)
            trial = trial / trial.norm()
            found = float(least_inertia(kmap, radius * trial))
            if found < best:
                best, u = found, trial
            else:
                u, step = u.detach(), 0.5 * step
    return best


def shape_row(neurok: NeuROK, sequence, expansion: str, seed: int, radii=RADII) -> dict | None:
    conditions = dataclasses.replace(replay_conditions(sequence), expansion=expansion)
    kmap, _ = neurok.body(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions, conditions.category)
    if kmap is None:
        return None
    k, mu = kmap.reduced_size, float(kmap.wall_mass[0])
    generator = torch.Generator().manual_seed(seed)
    rest = kmap.mass_terms(kmap.rest_coordinates(), torch.zeros(1, kmap.n_dof, dtype=torch.float64))
    eigenvectors = torch.linalg.eigh(rest.mass_matrix[0, 6:, 6:])[1].T
    random = torch.randn(RANDOM_DIRECTIONS, k, dtype=torch.float64, generator=generator)
    starts = torch.cat([eigenvectors, -eigenvectors, random / random.norm(dim=1, keepdim=True)])
    least = {str(t): least_on_sphere(kmap, t, starts) / mu for t in radii}
    folded = [t for t in radii if least[str(t)] < FOLD * MASS_FLOOR]
    row = {"category": sequence.category, "shape": sequence.shape, "coordinates": k, "wall": kmap.wall_radius,
           "least": least, "fold": folded[0] if folded else None}
    print(sequence.category, sequence.shape, k, {t: round(v, 4) for t, v in least.items()},
          "fold", row["fold"], "wall %.2f" % row["wall"], flush=True)
    return row


def table(results: dict[str, list[dict]], radii=RADII) -> str:
    lines = ["| weights | category | shapes | k | " + " | ".join(f"|s| = {t:g}" for t in radii)
             + " | fold radius (median) | wall | folds inside the wall |",
             "|---|---|---:|---:|" + "---:|" * len(radii) + "---:|---:|---:|"]
    for weights, rows in results.items():
        groups = defaultdict(list)
        for row in rows:
            groups[row["category"]].append(row)
        for category, group in groups.items():
            least = [f"{np.median([r['least'][str(t)] for r in group]):.3f}" for t in radii]
            folds = [r["fold"] if r["fold"] is not None else np.inf for r in group]
            inside = sum(f < r["wall"] for f, r in zip(folds, group))
            median = np.median(folds)
            lines.append(f"| {weights} | {category} | {len(group)} | {np.mean([r['coordinates'] for r in group]):.1f} | "
                         + " | ".join(least) + f" | {'beyond ' + str(radii[-1]) if np.isinf(median) else f'{median:g}'}"
                         f" | {np.median([r['wall'] for r in group]):.2f} | {inside} of {len(group)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, nargs="+", default=[WEIGHTS])
    parser.add_argument("--per-category", type=int, default=4)
    parser.add_argument("--expansion", choices=("quadratic", "exact"), default="quadratic")
    parser.add_argument("--radii", type=float, nargs="+", default=list(RADII),
                        help="the spheres |s| = t searched, prior standard deviations, ascending")
    parser.add_argument("--tag", default=None, help="results as latent_folds_TAG")
    a = parser.parse_args()
    if any(t <= 0 for t in a.radii) or sorted(a.radii) != a.radii:
        parser.error("--radii must be positive and ascending (the fold radius is the first that folds)")
    shipped = NeuROK.load().materials  # for checkpoints that carry none: only the wall and k matter here
    chosen = pick_sequences(a.corpus, "heldout", a.per_category, spread=1)
    results = {}
    for weights in a.weights:
        neurok = with_materials(weights, shipped)
        rows = [shape_row(neurok, sequence, a.expansion, seed, a.radii)
                for sequences in chosen.values() for seed, sequence in enumerate(sequences)]
        results[f"{weights.parent.name}/{weights.name}"] = [row for row in rows if row is not None]
    text = f"Latent inertia lambda_min(M_ss) / mu on |s| = t ({a.expansion} map):\n\n" + table(results, a.radii)
    print(text)
    write_results("latent_folds" + (f"_{a.tag}" if a.tag else ""), text, results=results, corpus=a.corpus.name,
                  expansion=a.expansion, radii=a.radii)


if __name__ == "__main__":
    main()
