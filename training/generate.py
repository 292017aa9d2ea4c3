"""Generate the training corpus into shards, in parallel, resumable.

    python -m training.generate OUT [--category articulated] [--train 300] [--heldout 50]
                                    [--shard-size 25] [--workers 2]

Shard k of a split holds sequence seeds [k * size, (k + 1) * size). Shards already present are
checked (same seeds, same generator) and skipped, so the same command continues an interrupted
run; a seed whose simulation fails is left out and its error kept beside the shard in
``<shard>.failures.json``. At the end the manifest is rewritten.
"""

import argparse
import json
import multiprocessing
import os
import time
import traceback
from pathlib import Path

import numpy as np

from training.corpus import articulated, cloth, continuum, elastic
from training.corpus.shards import write_manifest, write_shard
from training.parent_watch import exit_with_parent

SAMPLERS = {"articulated": articulated.sample_articulated, "cloth": cloth.sample_cloth,
            "continuum": continuum.sample_continuum, "elastic": elastic.sample_elastic}
GENERATORS = {name: module.GENERATOR for name, module in
              (("articulated", articulated), ("cloth", cloth), ("continuum", continuum), ("elastic", elastic))}


def shard_path(out: Path, category: str, split: str, index: int) -> Path:
    return out / f"{category}-{split}-{index:05d}.npz"


def worker_pool(workers: int):
    """Spawned workers, each on a core of its own and ending with this process (``parent_watch``)."""
    return multiprocessing.get_context("spawn").Pool(workers, initializer=_set_up_worker, initargs=(os.getpid(),))


def _set_up_worker(parent: int) -> None:
    exit_with_parent(parent)
    pin_to_one_core()


def pin_to_one_core():
    """Each worker on a core of its own: Blender's cloth repeats to ~1e-5 m only single-threaded, and
    the workers stop competing for the same core."""
    cores = sorted(os.sched_getaffinity(0))
    identity = multiprocessing.current_process()._identity
    os.sched_setaffinity(0, {cores[(identity[0] - 1) % len(cores)] if identity else cores[0]})


def make_shard(job) -> tuple[Path, int, int, float]:
    out, category, split, index, first, last = job
    began = time.perf_counter()
    sequences, failures = [], []
    for seed in range(first, last):
        try:
            sequences.append(SAMPLERS[category](seed, split))
        except Exception:  # one bad seed must not stop the corpus; its reason is kept
            failures.append({"seed": seed, "split": split, "error": traceback.format_exc(limit=3)})
    path = shard_path(out, category, split, index)
    if failures:
        path.with_name(path.name + ".failures.json").write_text(json.dumps(failures, indent=1))
    write_shard(path, sequences, (first, last), GENERATORS[category])
    return path, len(sequences), len(failures), time.perf_counter() - began


def jobs(out: Path, category: str, counts: dict[str, int], size: int):
    for split, count in counts.items():
        for index, first in enumerate(range(0, count, size)):
            last = min(first + size, count)
            path = shard_path(out, category, split, index)
            if path.exists():
                _check_existing(path, first, last, GENERATORS[category])
            else:
                yield out, category, split, index, first, last


def _check_existing(path: Path, first: int, last: int, generator: str):
    with np.load(path) as stored:
        seeds, made_by = tuple(int(s) for s in stored["seeds"]), str(stored["generator"])
    if seeds != (first, last) or made_by != generator:
        raise ValueError(f"{path} holds seeds {seeds} from {made_by}, this run wants {(first, last)} from "
                         f"{generator}: use a new folder or the same --shard-size and counts")


def generate(out: Path, category: str, counts: dict[str, int], size: int, workers: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    todo = list(jobs(out, category, counts, size))
    began, done = time.perf_counter(), 0
    print(f"{category}: {len(todo)} shards to make in {out}", flush=True)
    with worker_pool(workers) as pool:
        for path, n, failed, seconds in pool.imap_unordered(make_shard, todo):
            done += n
            rate = done / (time.perf_counter() - began) * 3600
            note = f", {failed} failed (see {path.name}.failures.json)" if failed else ""
            print(f"  {path.name}: {n} sequences in {seconds:.1f} s ({rate:.0f} sequences/hour){note}", flush=True)
    total = write_manifest(out)
    print(f"manifest: {total} sequences", flush=True)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--category", choices=sorted(SAMPLERS), default="articulated")
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--heldout", type=int, default=50)
    parser.add_argument("--shard-size", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2)
    a = parser.parse_args()
    generate(a.out, a.category, {"train": a.train, "heldout": a.heldout}, a.shard_size, a.workers)


if __name__ == "__main__":
    main()
