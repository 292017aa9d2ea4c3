"""How close the learned coordinates come to each reference's shape: what any rollout on them could
reach, and what the model holds along them.

    .venv/bin/python -m benchmarks.latent_reach CORPUS [--per-category 10] [--categories continuum ...]

For each held-out sequence the body's reduced coordinates s, as the solver builds them (the same
subspace, the same number k), are fitted to the reference's frame at each time by least squares over
the vertices, after the best rigid alignment:

    min_s  min_{R, t}  sum_i |R y_i(s) + t - x_i|^2

(Adam on s, the alignment solved exactly at each iteration, the best iterate kept by the shape error).
Two fits: on the solver's own map with |s| held inside its wall (``neural.wall_radius``, sqrt(k) +
2.5: beyond it the potential's wall stops any rollout), and on the exact decoder with s free (what the
model represents along those directions; past |s| of about 24, the 99th percentile of training shapes'
posteriors, it extrapolates). Reported per category: the shape error (``training.calibrate.
shape_error``, over the diagonal) of the rest shape, which is what rigid motion leaves, and of each
fit, how many fits are closer than the rest shape by 10 % and at least 0.005, and the median |s|.
Writes benchmarks/results/latent_reach{_<categories>}.{json,md}.
"""

import argparse
import dataclasses
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from benchmarks import results_name, write_results
from neurok_blender.core import NeuROK
from neurok_blender.core.options import DEFORMABLE
from neurok_blender.core.trajectory import OUTPUT
from training.evaluation import diagonal, frame_at, pick_sequences, replay_conditions, shape_error
from training.examples import rigid_alignment

TIMES = (0.5, 2.0)  # s
ITERATIONS = 1000
PATIENCE = 100  # iterations without a better fit before the fit stops
LEARNING_RATE = 0.05
FITS = ("inside the wall", "exact decoder")
CLOSER = (0.9, 0.005)  # a fit counts as closer below 0.9 of the rest shape's error and 0.005 under it


def fit(kmap, points: torch.Tensor, target: np.ndarray, size: float, radius: float | None) -> tuple[float, float]:
    """The least shape error of y(s) against ``target`` over the iterates, and its |s|; with ``radius``
    every iterate is projected back onto the ball |s| <= radius."""
    s = torch.zeros(1, kmap.reduced_size, dtype=points.dtype, requires_grad=True)
    optimizer = torch.optim.Adam([s], lr=LEARNING_RATE)
    goal = torch.as_tensor(target, dtype=points.dtype)
    weights = np.ones(len(target))
    best, best_norm, since = np.inf, 0.0, 0
    for _ in range(ITERATIONS):
        with torch.enable_grad():
            y = kmap.deformed(s, OUTPUT)[0]
            rotation, translation = rigid_alignment(y.detach().numpy(), target, weights)
            aligned = y @ torch.as_tensor(rotation, dtype=y.dtype).T + torch.as_tensor(translation, dtype=y.dtype)
            loss = ((aligned - goal) ** 2).sum(-1).mean()
        error = float(torch.linalg.norm(aligned.detach() - goal, dim=-1).mean()) / size  # this iterate's
        if error < best:
            best, best_norm, since = error, float(s.detach().norm()), 0
        elif (since := since + 1) >= PATIENCE:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if radius is not None:
            with torch.no_grad():
                s.mul_(torch.clamp(radius / s.norm().clamp(min=1e-300), max=1.0))
    return best, best_norm


def sequence_row(neurok: NeuROK, sequence) -> dict:
    vertices = sequence.rest_vertices.astype(np.float64)
    conditions = replay_conditions(sequence)
    row = {"category": sequence.category, "shape": sequence.shape, "seed": sequence.seed}
    maps = {FITS[0]: neurok.body(vertices, sequence.faces, conditions, conditions.category)[0],
            FITS[1]: neurok.body(vertices, sequence.faces, dataclasses.replace(conditions, expansion="exact"),
                                 conditions.category)[0]}
    row["coordinates"] = 0 if maps[FITS[0]] is None else maps[FITS[0]].reduced_size
    points = torch.as_tensor(vertices)[None]
    for kmap in maps.values():
        if kmap is not None:
            kmap.attach(OUTPUT, points, parts=kmap.shape.vertex_parts, output=True)
    size = diagonal(sequence)
    for t in TIMES:
        target = sequence.positions[frame_at(t, sequence.fps, len(sequence.positions))].astype(np.float64)
        rest = shape_error(vertices, target, size)
        row[str(t)] = {"rest": {"error": rest, "latent_norm": 0.0}}
        for name, kmap in maps.items():
            reached, norm = (rest, 0.0) if kmap is None else fit(
                kmap, points, target, size, kmap.wall_radius if name == FITS[0] else None)
            row[str(t)][name] = {"error": reached, "latent_norm": norm} if reached < rest else row[str(t)]["rest"]
    print(sequence.category, sequence.shape, {t: {n: round(row[str(t)][n]["error"], 4) for n in ("rest",) + FITS}
                                              for t in TIMES}, flush=True)
    return row


def table(rows: list[dict]) -> str:
    groups = defaultdict(list)
    for row in rows:
        groups[row["category"]].append(row)
    groups["all"] = rows
    columns = [f"rest shape at {t} s" for t in TIMES] + [
        column for t in TIMES for n in FITS
        for column in (f"{n} at {t} s", f"{n}: closer at {t} s", f"{n}: median |s| at {t} s")]
    lines = ["| category | sequences | coordinates | " + " | ".join(columns) + " |",
             "|---|---:|---:|" + "---:|" * len(columns)]
    for category, group in groups.items():
        cells = [f"{np.mean([r[str(t)]['rest']['error'] for r in group]):.4f}" for t in TIMES]
        for t in TIMES:
            rest = np.array([r[str(t)]["rest"]["error"] for r in group])
            for name in FITS:
                reached = np.array([r[str(t)][name]["error"] for r in group])
                closer = (reached < CLOSER[0] * rest) & (reached < rest - CLOSER[1])
                cells += [f"{reached.mean():.4f}", f"{int(closer.sum())} of {len(group)}",
                          f"{np.median([r[str(t)][name]['latent_norm'] for r in group]):.1f}"]
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
    neurok = NeuROK.load(a.weights)
    rows = [sequence_row(neurok, sequence)
            for category, sequences in pick_sequences(a.corpus, "heldout", a.per_category, spread=1).items()
            if category in a.categories for sequence in sequences]
    text = table(rows)
    print(text)
    write_results(results_name("latent_reach", a.categories), text, rows=rows, corpus=a.corpus.name)


if __name__ == "__main__":
    main()
