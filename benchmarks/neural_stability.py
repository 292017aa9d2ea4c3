"""Stability of long neural rollouts: 1000 frames of each held-out sequence's own conditions.

    .venv/bin/python -m benchmarks.neural_stability CORPUS [--weights W] [--per-category N] [--frames 1000]

Each held-out shape replays its sequence's conditions (velocity, spin, pull, forces, ground) for
1000 frames (about 42 s at 24 fps) and must stay finite and bounded. A run counts as exploding when
the body's extent (the diagonal of its vertices' bounding box, which no motion of a whole body
changes) grows past EXPLODED times its rest diagonal. Resumable: each finished run is appended to
out/neural_stability.jsonl and skipped on the next start. Writes benchmarks/results/neural_stability.{json,md}.
"""

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import write_results
from neurok_blender.core import NeuROK, SimulationError
from training.calibrate import pick_sequences, replay_conditions

EXPLODED = 3.0


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


def table(rows: list[dict], frames: int) -> str:
    groups = defaultdict(list)
    for r in rows:
        groups[r["category"]].append(r)
    groups["all"] = rows
    lines = [f"| category | runs of {frames} frames | non-finite | exploding | largest extent growth | s per run |",
             "|---|---:|---:|---:|---:|---:|"]
    for category, group in groups.items():
        growth = [r["max_extent_growth"] for r in group if r["finite"]]
        lines.append(f"| {category} | {len(group)} | {sum(not r['finite'] for r in group)} | "
                     f"{sum(r['exploded'] for r in group)} | {max(growth) if growth else float('nan'):.2f} | "
                     f"{np.mean([r['seconds'] for r in group]):.0f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=None, help="default: every held-out sequence")
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--progress", type=Path, default=Path("out/neural_stability.jsonl"))
    a = parser.parse_args()
    neurok = NeuROK.load(a.weights, device="cpu")
    a.progress.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if a.progress.exists():
        for line in a.progress.read_text().splitlines():
            row = json.loads(line)
            if row["frames"] == a.frames:
                done[(row["category"], row["shape"], row["seed"])] = row
    rows = []
    chosen = pick_sequences(a.corpus, "heldout", a.per_category or 10**6, spread=1)
    for category, sequences in chosen.items():
        for sequence in sequences:
            key = (category, sequence.shape, sequence.seed)
            if key not in done:
                done[key] = {"category": category, "shape": sequence.shape, "seed": sequence.seed, "frames": a.frames,
                             **stability(neurok, sequence, a.frames)}
                with a.progress.open("a") as log:
                    log.write(json.dumps(done[key]) + "\n")
                print(done[key], flush=True)
            rows.append(done[key])
    text = table(rows, a.frames)
    print(text)
    write_results("neural_stability", text, rows=rows)


if __name__ == "__main__":
    main()
