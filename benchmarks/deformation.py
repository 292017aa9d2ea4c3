"""Whether the learned coordinates carry the motion: the neural run's shape change against the reference's.

    .venv/bin/python -m benchmarks.deformation CORPUS [--weights W ...] [--per-category 10] [--spread 3]
                                                  [--categories cloth ...] [--wall-margin M] [--stiffness S] [--tag T]

Each held-out sequence (shapes never trained on) is replayed with its own conditions and material
(``training.evaluation.replay_conditions``; a cloth sequence's obstacles as colliders).
Per sequence: the peak shape change of the reference and of the neural run, the largest over the
frames of the mean vertex distance to the rest shape after the best rigid alignment, over the
bounding-box diagonal (``training.evaluation.peak_shape_change``), their ratio, the mean vertex error at
0.5 s over the diagonal, and each run's peak edge strain (``training.evaluation.peak_strain``: a
shape change that stretches or squeezes the surface, as no cloth does, is no plausible one); and the
same for the rigid solver (where the body goes without any deformation). Per category: the median
ratio, how many ratios lie within [2/3, 1.5] and how many of those stretch the surface plausibly
(a peak strain at most ``calibrate.STRAIN_ALLOWANCE`` times the reference's, ``calibrate.strain_over``),
the mean error at 0.5 s (over the rollouts that finished), how many went non-finite, and the median
peak strains. Issue targets: the median ratio within [2/3, 1.5], the
error at 0.5 s at most 0.05.
Per weights: the held-out reconstruction on the validation batch ``training.train`` draws (posterior
mean, over the diagonal, ``training.heldout_error``) against no deformation, and the posterior |s|
of 96 training examples in the solver's reduced coordinates (``training.calibrate.latent_reach``)
against its wall S (``neural.wall_radius`` at k_q = 10, with the weights' margin). Weights without
calibrated materials (a fine-tune's) run with the shipped weights' materials, so that only the
latent differs. ``--wall-margin`` puts the solver's wall at sqrt(k_q) + M prior standard deviations
instead of the weights' own (their calibrated margin, else ``neural.WALL_MARGIN``); ``--stiffness``
replays every sequence at that Stiffness instead of its own (the springs' frequency goes as its
square root). Writes benchmarks/results/deformation{_<categories>}{_wallM}{_stiffnessS}{_TAG}.{json,md}.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks import results_name, weights_label, write_results
from neurok_blender.core import NeuROK, SimulationError
from neurok_blender.core.checkpoint import load_model, read_checkpoint
from neurok_blender.core.neurok import WEIGHTS
from neurok_blender.core.neural import WALL_MARGIN, wall_radius
from neurok_blender.core.options import DEFORMABLE
from training.calibrate import STRAIN_ALLOWANCE, latent_reach, strain_over
from training.evaluation import (SHORT_HORIZON, errors_over_time, frame_at, peak_shape_change, peak_strain,
                                 pick_sequences, positive, positive_float, replay_conditions)
from training.heldout_error import heldout_error
from training.train import load_corpus

AT = SHORT_HORIZON  # s: where the trajectory error is read
WITHIN = (2 / 3, 1.5)  # the ratio of peak shape changes that counts as the reference's
REACH_EXAMPLES = 96


def with_materials(weights: Path, fallback: dict, wall_margin: float | None = None) -> NeuROK:
    """The model at ``weights`` with its own calibrated materials, or ``fallback`` when it has none;
    its wall at ``wall_margin`` when given."""
    payload = read_checkpoint(weights)
    neurok = NeuROK.load(weights) if payload.get("materials") else \
        NeuROK(load_model(weights, "cpu"), fallback, str(weights), payload.get("wall_margin", WALL_MARGIN))
    if wall_margin is not None:
        neurok.wall_margin = wall_margin
    return neurok


def sequence_row(neurok: NeuROK, sequence, **changes) -> dict:
    """One replay's figures; a rollout that fails (SimulationError) is a non-finite row, NaN in the rest."""
    conditions = replay_conditions(sequence, **changes)
    reference = peak_shape_change(sequence.positions, sequence)
    row = {"shape": sequence.shape, "pinned": conditions.pins is not None, "reference_peak": reference,
           "reference_strain": peak_strain(sequence.positions, sequence)}
    try:
        positions = neurok.simulate(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions).positions
    except SimulationError as error:
        return {**row, "finite": False, "failed": str(error), "neural_peak": np.nan, "ratio": np.nan, "error_at": np.nan,
                "neural_strain": np.nan}
    at = frame_at(AT, sequence.fps, len(positions))
    ours = peak_shape_change(positions, sequence)
    return {**row, "finite": bool(np.isfinite(positions).all()), "neural_peak": ours,
            "ratio": ours / max(reference, 1e-12), "error_at": float(errors_over_time(positions, sequence)[at]),
            "neural_strain": peak_strain(positions, sequence)}


def evaluate(weights: Path, corpus: Path, chosen: dict, fallback: dict, wall_margin: float | None = None,
             **changes) -> dict:
    began = time.perf_counter()
    neurok = with_materials(weights, fallback, wall_margin)
    error, still = heldout_error(weights, load_corpus(corpus, "heldout"))
    reach, _ = latent_reach(neurok.model, corpus, examples=REACH_EXAMPLES)
    rows = {category: [sequence_row(neurok, s, **changes) for s in sequences] for category, sequences in chosen.items()}
    return {"weights": weights_label(weights), "heldout_error": error, "no_deformation": still,
            "reach": [float(np.percentile(reach, p)) for p in (50, 90, 99)], "wall_margin": neurok.wall_margin, "rows": rows,
            "seconds": time.perf_counter() - began}


def tables(results: list[dict], rigid: dict) -> str:
    lines = ["| weights | held-out reconstruction | no deformation | posterior \\|s\\| 50 / 90 / 99 % | the wall at k_q = 10 |",
             "|---|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['weights']} | {r['heldout_error']:.4f} | {r['no_deformation']:.4f} | "
                     + " / ".join(f"{v:.1f}" for v in r["reach"]) + f" | {wall_radius(10, r['wall_margin']):.1f} |")
    lines += ["", "| weights | category | sequences | reference peak (median) | neural peak (median) | ratio (median) "
                  f"| ratio within [{WITHIN[0]:.2f}, {WITHIN[1]}] | of them, stretching at most {STRAIN_ALLOWANCE} "
                  f"times the reference | error at {AT} s (mean) | non-finite "
                  "| peak edge strain, reference / neural (median) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, by_category in [(r["weights"], r["rows"]) for r in results] + [("rigid only", rigid)]:
        for category, rows in by_category.items():
            ratios = np.array([row["ratio"] for row in rows])
            within = (ratios >= WITHIN[0]) & (ratios <= WITHIN[1])
            plausible = np.array([strain_over(row["neural_strain"], row["reference_strain"]) <= STRAIN_ALLOWANCE
                                  for row in rows])
            lines.append(
                f"| {name} | {category} | {len(rows)} | "
                f"{np.median([row['reference_peak'] for row in rows]):.4f} | {np.nanmedian([row['neural_peak'] for row in rows]):.4f} | "
                f"{np.nanmedian(ratios):.2f} | {int(within.sum())} of {len(rows)} | {int((within & plausible).sum())} | "
                f"{np.nanmean([row['error_at'] for row in rows]):.3f} | {sum(not row['finite'] for row in rows)} | "
                f"{np.median([row['reference_strain'] for row in rows]):.3f} / "
                f"{np.nanmedian([row['neural_strain'] for row in rows]):.3f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, nargs="+", default=[WEIGHTS])
    parser.add_argument("--per-category", type=positive, default=10)
    parser.add_argument("--spread", type=positive, default=3, help="take every SPREAD-th usable held-out sequence")
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE))
    parser.add_argument("--wall-margin", type=float, default=None, help="the wall at sqrt(k_q) + this (default: the weights')")
    parser.add_argument("--stiffness", type=positive_float, default=None, help="replay at this Stiffness (default: each sequence's)")
    parser.add_argument("--tag", default=None, help="results as deformation_<categories>_TAG (a run kept beside the others)")
    a = parser.parse_args()
    chosen = {c: s for c, s in pick_sequences(a.corpus, "heldout", a.per_category, a.spread).items()
              if c in a.categories and s}
    if not chosen:
        parser.error(f"{a.corpus} holds no usable held-out sequence of {', '.join(a.categories)}")
    shipped = NeuROK.load(WEIGHTS)
    changes = {} if a.stiffness is None else {"stiffness": a.stiffness}
    results = [evaluate(w, a.corpus, chosen, shipped.materials, a.wall_margin, **changes) for w in a.weights]
    rigid = {c: [sequence_row(shipped, s, category="rigid", pull=None) for s in sequences]
             for c, sequences in chosen.items()}  # where the body goes without any deformation
    table = tables(results, rigid)
    print(table)
    name = results_name("deformation", a.categories) + ("" if a.wall_margin is None else f"_wall{a.wall_margin:g}") \
        + ("" if a.stiffness is None else f"_stiffness{a.stiffness:g}") + ("" if a.tag is None else f"_{a.tag}")
    write_results(name, table, corpus=str(a.corpus), wall_margin=a.wall_margin, stiffness=a.stiffness,
                  results=results, rigid=rigid)


if __name__ == "__main__":
    main()
