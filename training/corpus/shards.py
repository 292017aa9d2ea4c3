"""Shards: one compressed .npz per batch of sequences, written atomically, and a manifest.

A shard file exists only when complete (written under a temporary name, then renamed), so an
interrupted generation resumes by skipping the shards that exist.
"""

import json
import os
from pathlib import Path

import numpy as np

from .sequence import Sequence, to_json

MANIFEST = "manifest.jsonl"


def write_shard(path: Path, sequences: list[Sequence], seeds: tuple[int, int], generator: str) -> None:
    """Write what ``generator`` made for seeds [first, last) (failed seeds are missing from it)."""
    arrays = {"metadata": np.array([to_json(s.metadata()) for s in sequences], dtype=str),
              "seeds": np.array(seeds), "generator": np.array(generator)}
    for i, sequence in enumerate(sequences):
        arrays.update({f"{i}/{k}": v for k, v in sequence.arrays().items()})
    temporary = path.with_name(path.name + ".partial.npz")
    np.savez_compressed(temporary, **arrays)
    os.replace(temporary, path)


def read_shard(path: Path) -> list[Sequence]:
    with np.load(path) as stored:
        metadata = [json.loads(m) for m in stored["metadata"]]
        sequences = []
        for i, meta in enumerate(metadata):
            arrays = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith(f"{i}/")}
            sequences.append(Sequence.from_stored(meta, arrays))
    return sequences


def write_manifest(folder: Path) -> int:
    """(Re)write folder/manifest.jsonl from the shards present: one line per sequence."""
    lines = []
    for shard in sorted(folder.glob("*.npz")):
        if shard.name.endswith(".partial.npz"):
            continue
        with np.load(shard) as stored:
            for i, meta in enumerate(stored["metadata"]):
                row = json.loads(meta)
                row.update(shard=shard.name, index=i)
                lines.append(to_json(row))
    temporary = folder / (MANIFEST + ".partial")
    temporary.write_text("".join(line + "\n" for line in lines))
    os.replace(temporary, folder / MANIFEST)
    return len(lines)
