"""Generate the training corpus into shards, in parallel, resumable.

    python -m training.generate OUT [--category articulated] [--train 300] [--heldout 50]
                                    [--shard-size 25] [--workers 2]

Shard k of a split holds sequence seeds [k * size, (k + 1) * size). Shards already present are
skipped, so the same command continues an interrupted run; at the end the manifest is rewritten.
"""

import argparse
import multiprocessing
import time
from pathlib import Path

from training.corpus.articulated import sample_articulated
from training.corpus.elastic import sample_elastic
from training.corpus.shards import write_manifest, write_shard

SAMPLERS = {"articulated": sample_articulated, "elastic": sample_elastic}


def shard_path(out: Path, category: str, split: str, index: int) -> Path:
    return out / f"{category}-{split}-{index:05d}.npz"


def make_shard(job) -> tuple[Path, int, float]:
    out, category, split, index, first, last = job
    began = time.perf_counter()
    sequences = [SAMPLERS[category](seed, split) for seed in range(first, last)]
    path = shard_path(out, category, split, index)
    write_shard(path, sequences)
    return path, len(sequences), time.perf_counter() - began


def jobs(out: Path, category: str, counts: dict[str, int], size: int):
    for split, count in counts.items():
        for index, first in enumerate(range(0, count, size)):
            if not shard_path(out, category, split, index).exists():
                yield out, category, split, index, first, min(first + size, count)


def generate(out: Path, category: str, counts: dict[str, int], size: int, workers: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    todo = list(jobs(out, category, counts, size))
    began, done = time.perf_counter(), 0
    print(f"{category}: {len(todo)} shards to make in {out}", flush=True)
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for path, n, seconds in pool.imap_unordered(make_shard, todo):
            done += n
            rate = done / (time.perf_counter() - began) * 3600
            print(f"  {path.name}: {n} sequences in {seconds:.1f} s ({rate:.0f} sequences/hour)", flush=True)
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
