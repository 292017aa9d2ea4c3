"""Stability of long neural rollouts: 1000 frames of each held-out sequence's own conditions.

    .venv/bin/python -m benchmarks.neural_stability CORPUS [--weights W] [--per-category N] [--frames 1000]
                                                     [--categories elastic ...] [--jobs 2]

Each held-out shape replays its sequence's conditions (velocity, spin, pull, forces, ground) for
1000 frames (about 42 s at 24 fps) and must stay finite and bounded. A run counts as exploding when
the body's extent (the diagonal of its vertices' bounding box, which no motion of a whole body
changes) grows past EXPLODED times its rest diagonal. Resumable: each finished run is appended to
benchmarks/results/neural_stability_runs.jsonl (kept with the code, so a run over every held-out
shape, many hours, goes on across sessions and machines) and skipped on the next start. A row records
its sequence's generator and a digest of the network's weights and its category's calibrated
material; rows made with others are stale and run again (a change of the solver's code is not seen:
start a new progress file then). ``--jobs`` spreads the runs over that many processes, one thread each.
Writes benchmarks/results/neural_stability.{json,md}, with ``--categories`` neural_stability_<categories>;
``--report`` rolls nothing out and writes the table of the runs done so far, each category's count
against its held-out sequences (a run over every shape spans sessions).

A body's extent does change where it deforms (a jelly squashes, a door swings open), so each run is
also set against its reference's largest growth over the reference's own frames (2.5 s): a rollout
that spreads no further than the simulator's body did is not coming apart.
"""

import argparse
import dataclasses
import hashlib
import json
import time
from collections import Counter
from concurrent.futures import as_completed
from pathlib import Path

import numpy as np

from benchmarks import RESULTS, load_worker_neurok, results_name, worker_neurok, write_results
from neurok_blender.core import NeuROK, SimulationError
from neurok_blender.core.options import DEFORMABLE
from training.evaluation import pick_sequences, positive, replay_conditions
from training.parent_watch import spawned_pool

EXPLODED = 3.0
PROGRESS = RESULTS / "neural_stability_runs.jsonl"


def extent(points: np.ndarray) -> np.ndarray:
    """Bounding-box diagonal per frame, (F, V, 3) -> (F,)."""
    return np.linalg.norm(points.max(1) - points.min(1), axis=-1)


def stability(neurok: NeuROK, sequence, frames: int) -> dict:
    conditions = replay_conditions(sequence, frames=frames)
    rest = float(extent(sequence.rest_vertices[None].astype(np.float64))[0])
    began = time.perf_counter()
    try:
        result = neurok.simulate(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions)
    except SimulationError as error:
        return {"finite": False, "exploded": False, "error": str(error), "seconds": time.perf_counter() - began}
    growth = float(extent(result.positions.astype(np.float64)).max() / rest)
    return {"finite": True, "exploded": growth > EXPLODED, "max_extent_growth": growth,
            "substeps": result.substeps, "seconds": time.perf_counter() - began}


def reference_growth(sequence) -> float:
    """The reference body's largest extent over its frames, in rest extents."""
    return float(extent(sequence.positions.astype(np.float64)).max()
                 / extent(sequence.rest_vertices[None].astype(np.float64))[0])


def table(rows: list[dict], frames: int, held_out: dict[str, int]) -> str:
    """One line per category and one for all: runs done of the held-out sequences chosen, failures, growth,
    and the largest growth against the reference's (row["reference_growth"])."""
    groups = {category: [r for r in rows if r["category"] == category] for category in held_out}
    groups["all"] = rows
    held_out = {**held_out, "all": sum(held_out.values())}
    lines = [f"| category | runs of {frames} frames | non-finite | exploding | largest extent growth "
             "| the reference's largest | largest growth over its reference's | s per run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for category, group in groups.items():
        finite = [r for r in group if r["finite"]]
        largest = f"{max(r['max_extent_growth'] for r in finite):.2f}" if finite else "-"
        reference = f"{max(r['reference_growth'] for r in group):.2f}" if group else "-"
        beyond = f"{max(r['max_extent_growth'] / r['reference_growth'] for r in finite):.3f}" if finite else "-"
        seconds = f"{np.mean([r['seconds'] for r in group]):.0f}" if group else "-"
        lines.append(f"| {category} | {len(group)} of {held_out[category]} | {sum(not r['finite'] for r in group)} | "
                     f"{sum(r['exploded'] for r in group)} | {largest} | {reference} | {beyond} | {seconds} |")
    return "\n".join(lines)


def key_of(sequence) -> tuple:
    """What identifies a run in the progress file."""
    return sequence.category, sequence.shape, sequence.seed, sequence.generator


def model_digest(neurok: NeuROK, category: str) -> str:
    """What a run depends on besides its sequence and the code: the network's weights and the category's
    calibrated material (a recalibration of one category leaves the others' runs valid, and so does a
    new material field at its default, which changes nothing)."""
    material = neurok.materials[category]
    changed = {f.name: getattr(material, f.name) for f in dataclasses.fields(material)
               if getattr(material, f.name) != f.default}
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode())
    for name, tensor in neurok.model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def runs(neurok: NeuROK, sequences: list, frames: int, jobs: int):
    """(sequence, its row) as each run finishes; with ``jobs`` > 1 over that many processes."""
    if not sequences:
        return
    if jobs == 1:
        for sequence in sequences:
            yield sequence, stability(neurok, sequence, frames)
        return
    with spawned_pool(jobs, load_worker_neurok, neurok.source) as pool:
        pending = {pool.submit(_pooled_stability, sequence, frames): sequence for sequence in sequences}
        for done in as_completed(pending):
            yield pending[done], done.result()


def _pooled_stability(sequence, frames: int) -> dict:
    return stability(worker_neurok(), sequence, frames)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=None, help="default: every held-out sequence")
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE),
                        help="only these, written apart (neural_stability_<categories>)")
    parser.add_argument("--jobs", type=positive, default=1, help="processes rolling out at once")
    parser.add_argument("--progress", type=Path, default=PROGRESS)
    parser.add_argument("--report", action="store_true", help="roll nothing out: the table of the runs done so far")
    a = parser.parse_args()
    a.progress.parent.mkdir(parents=True, exist_ok=True)
    neurok = NeuROK.load(a.weights)
    digests = {category: model_digest(neurok, category) for category in a.categories}
    done = {}
    if a.progress.exists():
        for line in a.progress.read_text().splitlines():
            row = json.loads(line)
            current = digests.get(row["category"])  # None: a category this run leaves out
            if row["frames"] == a.frames and current is not None and row.get("model") == current:
                done[(row["category"], row["shape"], row["seed"], row["generator"])] = row
    chosen = [sequence for category, sequences in
              pick_sequences(a.corpus, "heldout", a.per_category or 10**6, spread=1).items()
              if category in a.categories for sequence in sequences]
    todo = [] if a.report else [sequence for sequence in chosen if key_of(sequence) not in done]
    print(f"{len(chosen)} held-out sequences, {len(todo)} to roll out", flush=True)
    for sequence, result in runs(neurok, todo, a.frames, a.jobs):
        category, shape, seed, generator = key = key_of(sequence)
        done[key] = row = {"category": category, "shape": shape, "seed": seed, "generator": generator,
                           "model": digests[category], "frames": a.frames, **result}
        with a.progress.open("a") as log:
            log.write(json.dumps(row) + "\n")
        print(row, flush=True)
    rows = [{**done[key_of(sequence)], "reference_growth": reference_growth(sequence)}
            for sequence in chosen if key_of(sequence) in done]
    text = table(rows, a.frames, Counter(sequence.category for sequence in chosen))
    print(text)
    write_results(results_name("neural_stability", a.categories), text, rows=rows)


if __name__ == "__main__":
    main()
