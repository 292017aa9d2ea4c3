"""Generate the training corpus into shards, in parallel, resumable.

    python -m training.generate OUT [--category articulated] [--train 300] [--heldout 50]
                                    [--shard-size 25] [--workers 2 | --ray [ADDRESS]]

Shard k of a split holds sequence seeds [k * size, (k + 1) * size). Shards already present are
checked (same seeds, same generator) and skipped, so the same command continues an interrupted
run; a seed whose simulation fails is left out and its error kept beside the shard in
``<shard>.failures.json``. At the end the manifest is rewritten. The shards are independent tasks
on ``neurok_blender.executors``: local processes, or Ray (``--ray`` starts it here, ``--ray auto``
or an address joins a cluster whose machines share OUT, a network folder); a shard's sequences
depend on its seeds only, whatever runs it.
"""

import argparse
import fcntl
import json
import os
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

import neurok_blender
import training
from neurok_blender.executors import Executor, Failed, run_all
from training.corpus import articulated, cloth, continuum, elastic, soft
from training.corpus.shards import write_manifest, write_shard
from training.corpus.solids import blob_pool

# "elastic-mpm": the elastic category's soft solids by MPM (corpus/soft.py), several times the FEM's rate
SAMPLERS = {"articulated": articulated.sample_articulated, "cloth": cloth.sample_cloth,
            "continuum": continuum.sample_continuum, "elastic": elastic.sample_elastic, "elastic-mpm": soft.sample_soft}
# what a category's seeds draw from that must be there first: a third of the continuum's shapes are
# fused blobs, whose seeds would each fail without the shape cache
PREREQUISITES = {"continuum": blob_pool}
GENERATORS = {name: module.GENERATOR for name, module in
              (("articulated", articulated), ("cloth", cloth), ("continuum", continuum), ("elastic", elastic),
               ("elastic-mpm", soft))}


def shard_path(out: Path, category: str, split: str, index: int) -> Path:
    return out / f"{category}-{split}-{index:05d}.npz"


def pin_to_one_core():
    """Hold this process to one core no other NeuROK worker of this machine holds (a lock file per
    core, kept while the process lives): Blender's cloth repeats to ~1e-5 m only single-threaded,
    and the workers stop competing for the same core. With more workers than cores, cores are shared."""
    cores = sorted(os.sched_getaffinity(0))
    for core in cores:  # read-only: another user's lock file locks as well
        lock = os.open(Path(tempfile.gettempdir()) / f"neurok-core-{core}.lock", os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        _held_core.append(lock)
        os.sched_setaffinity(0, {core})
        return
    os.sched_setaffinity(0, {cores[os.getpid() % len(cores)]})


_held_core = []  # the descriptor of the lock file of the core this process holds, open for life


def make_shard(job) -> tuple[Path, int, int, float]:
    """Simulate one shard's seeds and write it; (path, sequences, failed seeds, seconds)."""
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


def generate(out: Path, category: str, counts: dict[str, int], size: int, executor: Executor = Executor()) -> int:
    """Make the shards of ``counts`` (sequences per split) missing from ``out`` on ``executor``,
    each process pinned to a core; rewrite the manifest and return the sequences it lists. ValueError,
    before any shard, where the category's PREREQUISITES are missing."""
    for split, count in counts.items():
        if count and category in PREREQUISITES:
            PREREQUISITES[category](split)
    out.mkdir(parents=True, exist_ok=True)
    todo = list(jobs(out, category, counts, size))
    began, done, lost = time.perf_counter(), 0, []
    print(f"{category}: {len(todo)} shards to make in {out} on {executor}", flush=True)
    for job, outcome in run_all(make_shard, todo, executor, setup=pin_to_one_core, modules=[neurok_blender, training]):
        if isinstance(outcome, Failed):  # the shard as a whole (its writing, its worker); a rerun makes it
            lost.append(shard_path(*job[:4]).name)
            print(f"  {lost[-1]}: not made: {outcome.error}", flush=True)
            continue
        path, n, failed, seconds = outcome
        done += n
        rate = done / (time.perf_counter() - began) * 3600
        note = f", {failed} failed (see {path.name}.failures.json)" if failed else ""
        print(f"  {path.name}: {n} sequences in {seconds:.1f} s ({rate:.0f} sequences/hour){note}", flush=True)
    total = write_manifest(out)
    if lost:
        print(f"{len(lost)} shards not made ({', '.join(lost)}): run the same command again", flush=True)
    print(f"manifest: {total} sequences", flush=True)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--category", choices=sorted(SAMPLERS), default="articulated")
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--heldout", type=int, default=50)
    parser.add_argument("--shard-size", type=int, default=25)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=2, help="local processes, one core each (default 2)")
    where.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                       help="shards as Ray tasks: on this machine, or 'auto' or an address to join a cluster")
    a = parser.parse_args()
    executor = Executor(ray=a.ray) if a.ray is not None else Executor(workers=a.workers)
    try:
        generate(a.out, a.category, {"train": a.train, "heldout": a.heldout}, a.shard_size, executor)
    except (RuntimeError, ValueError) as error:  # Ray missing or out of reach; a prerequisite missing
        raise SystemExit(str(error)) from None


if __name__ == "__main__":
    main()
