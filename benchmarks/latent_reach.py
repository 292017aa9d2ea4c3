"""How close the learned coordinates can come to each reference's shape: the ceiling under the
solver's shape error, whatever its dynamics.

    .venv/bin/python -m benchmarks.latent_reach CORPUS [--per-category 10] [--categories continuum ...]

For each held-out sequence the body's reduced coordinates s, as the solver builds them (the same
subspace, the same number k), are fitted to the reference's frame at each time by least squares over
the vertices, after the best rigid alignment:

    min_s  min_{R, t}  sum_i |R y_i(s) + t - x_i|^2

(Adam on s, the alignment solved exactly at each iteration). Reported per category: the shape error
(``training.calibrate.shape_error``, over the diagonal) of the rest shape, which is what rigid motion
leaves, of the best fit found, which no rollout on these coordinates can beat by much, and the size
|s| that fit needs (the prior's posterior on training shapes is under 24 for 99 %; past it the decoder
extrapolates). Writes benchmarks/results/latent_reach{_<categories>}.{json,md}.
"""

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from neurok_blender.core import NeuROK
from neurok_blender.core.conditions import DEFORMABLE
from training.calibrate import diagonal, pick_sequences, replay_conditions, shape_error
from training.examples import rigid_alignment

TIMES = (0.5, 2.0)  # s
ITERATIONS = 150
LEARNING_RATE = 0.05


def best_fit(kmap, points: torch.Tensor, target: np.ndarray) -> tuple[np.ndarray, float]:
    """The deformed points y(s) (P, 3) closest to ``target`` after the best rigid alignment, and |s|."""
    s = torch.zeros(1, kmap.reduced_size, dtype=points.dtype, requires_grad=True)
    optimizer = torch.optim.Adam([s], lr=LEARNING_RATE)
    goal = torch.as_tensor(target, dtype=points.dtype)
    weights = np.ones(len(target))
    with torch.enable_grad():
        for _ in range(ITERATIONS):
            y = kmap.deformed(s, points)[0]
            rotation, translation = rigid_alignment(y.detach().numpy(), target, weights)
            aligned = y @ torch.as_tensor(rotation, dtype=y.dtype).T + torch.as_tensor(translation, dtype=y.dtype)
            loss = ((aligned - goal) ** 2).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        return kmap.deformed(s, points)[0].numpy(), float(s.norm())


def sequence_row(neurok: NeuROK, sequence) -> dict:
    vertices = sequence.rest_vertices.astype(np.float64)
    conditions = replay_conditions(sequence)
    row = {"category": sequence.category, "shape": sequence.shape, "seed": sequence.seed}
    kmap, _ = neurok.body(vertices, sequence.faces, conditions, conditions.category)
    row["coordinates"] = 0 if kmap is None else kmap.reduced_size
    points = torch.as_tensor(vertices)[None]
    if kmap is not None:
        kmap.attach(points, parts=kmap.shape.vertex_parts, output=True)
    size = diagonal(sequence)
    for t in TIMES:
        target = sequence.positions[min(int(round(t * sequence.fps)), len(sequence.positions) - 1)].astype(np.float64)
        rest = shape_error(vertices, target, size)
        fitted, norm = (vertices, 0.0) if kmap is None else best_fit(kmap, points, target)
        row[str(t)] = {"rest": rest, "best": min(rest, shape_error(fitted, target, size)), "latent_norm": norm}
    print(sequence.category, sequence.shape, {t: round(row[str(t)]["best"], 4) for t in TIMES}, flush=True)
    return row


def table(rows: list[dict]) -> str:
    groups = defaultdict(list)
    for row in rows:
        groups[row["category"]].append(row)
    groups["all"] = rows
    lines = ["| category | sequences | coordinates | " + " | ".join(
        f"rest shape: {t} s | best fit: {t} s | best fit closer by 10 % or more: {t} s | median abs(s) of the fit: {t} s"
        for t in TIMES) + " |", "|---|---:|---:|" + "---:|" * (4 * len(TIMES))]
    for category, group in groups.items():
        cells = []
        for t in TIMES:
            rest = np.array([r[str(t)]["rest"] for r in group])
            best = np.array([r[str(t)]["best"] for r in group])
            cells += [f"{rest.mean():.4f}", f"{best.mean():.4f}", f"{int((best < 0.9 * rest).sum())} of {len(group)}",
                      f"{np.median([r[str(t)]['latent_norm'] for r in group]):.1f}"]
        k = np.mean([r["coordinates"] for r in group])
        lines.append(f"| {category} | {len(group)} | {k:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE))
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights, device="cpu")
    rows = [sequence_row(neurok, sequence)
            for category, sequences in pick_sequences(a.corpus, "heldout", a.per_category, spread=1).items()
            if category in a.categories for sequence in sequences]
    text = table(rows)
    print(text)
    every = set(a.categories) == set(DEFORMABLE)
    name = "latent_reach" if every else "latent_reach_" + "_".join(c for c in DEFORMABLE if c in a.categories)
    write_results(name, text, rows=rows, corpus=a.corpus.name)


if __name__ == "__main__":
    main()
