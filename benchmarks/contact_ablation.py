"""What the learned coordinates add beyond the ground contact that comes with them.

    .venv/bin/python -m benchmarks.contact_ablation CORPUS --fidelity RESULTS.json [--jobs 2]
    .venv/bin/python -m benchmarks.contact_ablation --fidelity RESULTS.json --redraw

The neural solver lands a deforming body with its category's contact (``neurok.ground_contact``: the
restitution of the give its few coordinates lack, a yielding body's footprint rolling lever, a softer
ground spring under a soft solid); the fidelity benchmark's rigid-only baseline lands it on the plain
contact. This replays the sequences of a ``benchmarks.neural_fidelity`` results file (from the corpus
it replayed) rigidly with the neural contact and sets its error beside that file's neural and
rigid-only errors on the same sequences. Where it is as close as the neural rollout, the lead over
rigid motion is the contact's, not the deformation's. Cloth and articulated objects meet the ground
as rigid bodies do (their materials add no restitution, no rolling lever and no softer spring): there
this replay is the rigid-only one. Writes benchmarks/results/contact_ablation[_<categories>].{json,md},
named after the fidelity file.
"""

import argparse
import dataclasses
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import RESULTS, load_worker_neurok, worker_neurok, write_results
from benchmarks.neural_fidelity import TIMES, error_at, paired_difference
from neurok_blender.core import NeuROK
from neurok_blender.core.neurok import ground_contact
from neurok_blender.core.simulate import simulate
from training.calibrate import errors_over_time, pick_sequences, positive, replay_conditions, spawned_pool

ABLATION = "rigid, neural contact"
COLUMNS = ("neural", "rigid only", ABLATION)
PAIRED_TIMES = (0.5, 2.0)  # s: the ablation paired with the neural rollout and with rigid only, early and late


def rigid_with_neural_contact(neurok: NeuROK, sequence) -> np.ndarray:
    """The sequence's replay as a rigid body that meets the ground as the neural solver's body does."""
    conditions = replay_conditions(sequence)
    vertices = sequence.rest_vertices.astype(np.float64)
    kmap, info = neurok.body(vertices, sequence.faces, conditions, sequence.category)
    # without coordinates the neural solver itself is rigid, with the restitution of its material
    contact = {"restitution": info["contact_restitution"]} if kmap is None else ground_contact(kmap, info)
    rigid = dataclasses.replace(conditions, category="rigid", pull=None)
    return simulate(vertices, sequence.faces, rigid, contact=contact).positions


def ablation_row(neurok: NeuROK, sequence, fidelity_row: dict) -> dict:
    """The fidelity row's neural and rigid-only results and the rigid replay with the neural contact."""
    began = time.perf_counter()
    positions = rigid_with_neural_contact(neurok, sequence)
    row = {key: fidelity_row[key] for key in ("category", "shape", "seed", "fps", "neural", "rigid only")}
    row[ABLATION] = {"over_time": errors_over_time(positions, sequence).tolist(), "seconds": time.perf_counter() - began}
    print(sequence.category, sequence.shape, {c: error_at(row[c], 2.0, row["fps"]) for c in COLUMNS}, flush=True)
    return row


def _pooled_row(job) -> dict:
    return ablation_row(worker_neurok(), *job)


def table(rows: list[dict]) -> str:
    groups = defaultdict(list)
    for row in rows:
        groups[row["category"]].append(row)
    groups["all"] = rows
    pairs = [("neural", ABLATION, t) for t in PAIRED_TIMES] + [(ABLATION, "rigid only", t) for t in PAIRED_TIMES]
    header = ("| category | sequences | " + " | ".join(f"{c}: {t} s" for c in COLUMNS for t in TIMES) + " | "
              + " | ".join(f"{a} - {b} at {t} s | {a} closer at {t} s" for a, b, t in pairs) + " |")
    lines = [header, "|---|---:|" + "---:|" * (len(COLUMNS) * len(TIMES) + 2 * len(pairs))]
    for category, group in groups.items():
        complete = [r for r in group if all("over_time" in r[c] for c in COLUMNS)]
        cells = [f"{np.mean([error_at(r[c], t, r['fps']) for r in complete]):.4f}" if complete else "-"
                 for c in COLUMNS for t in TIMES]
        cells += [paired_difference(complete, a, b, t) for a, b, t in pairs]
        lines.append(f"| {category} | {len(complete)} of {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fidelity_sequences(corpus: Path, fidelity: dict) -> list[tuple]:
    """(sequence, fidelity row) for every row of the fidelity results, found in the corpus it replayed."""
    if fidelity.get("corpus") not in (None, corpus.name):
        raise SystemExit(f"the fidelity results replayed {fidelity['corpus']}, not {corpus.name}")
    rows = {(r["category"], r["shape"], r["seed"]): r for r in fidelity["rows"]}
    counts = defaultdict(int)
    for category, *_ in rows:
        counts[category] += 1
    # the fidelity benchmark picks the first usable held-out sequences of each category, in order
    found = {(s.category, s.shape, s.seed): s for category, count in counts.items()
             for s in pick_sequences(corpus, "heldout", count, spread=1).get(category, [])}
    missing = sorted(set(rows) - set(found))
    if missing:
        raise SystemExit(f"{corpus} lacks {len(missing)} of the fidelity results' sequences, e.g. {missing[0]}")
    return [(found[key], row) for key, row in rows.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", help="the corpus the fidelity results replayed")
    parser.add_argument("--fidelity", type=Path, required=True, help="a neural_fidelity results file")
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--jobs", type=positive, default=1, help="processes replaying sequences at once")
    parser.add_argument("--redraw", action="store_true", help="replay nothing: the stored result's table again")
    a = parser.parse_args()
    name = a.fidelity.stem.replace("neural_fidelity", "contact_ablation", 1)
    if a.redraw:
        stored = json.loads((RESULTS / f"{name}.json").read_text())
        rows = stored.pop("rows")
        text = table(rows)
        print(text)
        write_results(name, text, rows=rows, **stored)
        return
    if a.corpus is None:
        parser.error("the corpus the fidelity results replayed is missing")
    jobs = fidelity_sequences(a.corpus, json.loads(a.fidelity.read_text()))
    if a.jobs == 1:
        neurok = NeuROK.load(a.weights, device="cpu")
        rows = [ablation_row(neurok, *job) for job in jobs]
    else:
        with spawned_pool(a.jobs, load_worker_neurok, a.weights) as pool:
            rows = list(pool.map(_pooled_row, jobs))
    text = table(rows)
    print(text)
    write_results(name, text, rows=rows, corpus=a.corpus.name, fidelity=a.fidelity.name)


if __name__ == "__main__":
    main()
