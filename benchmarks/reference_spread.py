"""How far the reference simulators run off by themselves: the floor under any solver's error.

    .venv/bin/python -m benchmarks.reference_spread CORPUS [--per-category 10] [--categories elastic ...]
                                                    [--nudge 0.001] [--jobs 2] [--fidelity RESULTS.json]

Each held-out sequence that ``benchmarks.neural_fidelity`` replays (the same pick) is simulated again
by its own engine, from its seed, with the initial velocity ``nudge`` m/s off along x (1 mm/s: a start
no measurement of the scene would tell apart), and the two reference runs are compared as the solver
is compared with the reference: mean vertex distance over the bounding-box diagonal at 0.5, 1 and 2 s.
A body that tumbles, rolls over an edge or slides to a stop on friction can end up somewhere else
after a nudge that small, and no solver can be expected to predict the one run better than the
reference predicts itself. ``--nudge 0`` checks that the corpus replays exactly. ``--fidelity`` (a
neural_fidelity results file with the same sequences) adds the solver's and the rigid baseline's
error at 2 s on the same sequences. Writes benchmarks/results/reference_spread[_<categories>].{json,md}.
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import write_results
from benchmarks.neural_fidelity import TIMES, error_at
from neurok_blender.core.options import DEFORMABLE
from training.evaluation import errors_over_time, pick_sequences, positive
from neurok_blender.executors import Executor, Failed, run_in_order
from training.generate import SAMPLERS, pin_to_one_core

GOAL = 0.02  # the goal at 2 s, over the diagonal


def spread_row(job) -> dict:
    """The sequence made again from its seed with the nudge, against the stored run."""
    sequence, nudge = job
    again = SAMPLERS[sequence.category](sequence.seed, sequence.split, nudge=nudge)
    if again.shape != sequence.shape or again.generator != sequence.generator:
        raise RuntimeError(f"{sequence.category} seed {sequence.seed} makes {again.shape} ({again.generator}) "
                           f"where the corpus has {sequence.shape} ({sequence.generator}): not the same sequence")
    row = {"category": sequence.category, "shape": sequence.shape, "seed": sequence.seed, "fps": sequence.fps,
           "over_time": errors_over_time(again.positions.astype(np.float64), sequence).tolist()}
    print(sequence.category, sequence.shape, f"{error_at(row, 2.0, row['fps']):.4f} at 2 s", flush=True)
    return row


def table(rows: list[dict], fidelity: dict | None) -> str:
    groups = defaultdict(list)
    for row in rows:
        groups[row["category"]].append(row)
    groups["all"] = rows
    header = ("| category | sequences | " + " | ".join(f"reference spread: {t} s" for t in TIMES)
              + " | median at 2 s | under 2 % at 2 s |")
    columns = len(TIMES) + 2
    if fidelity:
        header += " neural at 2 s | rigid only at 2 s | neural under 2 % at 2 s |"
        columns += 3
    lines = [header, "|---|---:|" + "---:|" * columns]
    for category, group in groups.items():
        spread = [error_at(r, 2.0, r["fps"]) for r in group]
        cells = [f"{np.mean([error_at(r, t, r['fps']) for r in group]):.4f}" for t in TIMES]
        cells += [f"{np.median(spread):.4f}", f"{sum(s < GOAL for s in spread)} of {len(group)}"]
        if fidelity:
            replays = [fidelity.get((r["category"], r["shape"], r["seed"])) for r in group]
            done = [f for f in replays if f and all("over_time" in f[v] for v in ("neural", "rigid only"))]
            neural = [error_at(f["neural"], 2.0, f["fps"]) for f in done]
            rigid = [error_at(f["rigid only"], 2.0, f["fps"]) for f in done]
            cells += [f"{np.mean(neural):.4f}" if done else "-", f"{np.mean(rigid):.4f}" if done else "-",
                      f"{sum(n < GOAL for n in neural)} of {len(done)}"]
        lines.append(f"| {category} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_fidelity(path: Path | None) -> dict | None:
    """neural_fidelity's rows by (category, shape, seed)."""
    if path is None:
        return None
    return {(r["category"], r["shape"], r["seed"]): r for r in json.loads(path.read_text())["rows"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE))
    parser.add_argument("--nudge", type=float, default=1e-3, help="m/s added to the initial velocity along x")
    parser.add_argument("--jobs", type=positive, default=1, help="processes simulating at once, a core each")
    parser.add_argument("--fidelity", type=Path, default=None,
                        help="a neural_fidelity results file: adds its errors on the same sequences")
    a = parser.parse_args()
    picked = [(sequence, a.nudge) for category, sequences in pick_sequences(a.corpus, "heldout", a.per_category, spread=1).items()
              if category in a.categories for sequence in sequences]
    if not picked:
        parser.error(f"no held-out sequences of {', '.join(a.categories)} in {a.corpus}")
    rows = run_in_order(spread_row, picked, Executor(workers=a.jobs), setup=pin_to_one_core)
    failed = [row.error for row in rows if isinstance(row, Failed)]
    if failed:
        raise SystemExit(f"{len(failed)} replays failed: {failed[0]}")
    text = table(rows, read_fidelity(a.fidelity))
    print(text)
    suffix = "" if set(a.categories) == set(DEFORMABLE) else "_" + "_".join(a.categories)
    write_results(f"reference_spread{suffix}", text, rows=rows, nudge=a.nudge, corpus=a.corpus.name)


if __name__ == "__main__":
    main()
