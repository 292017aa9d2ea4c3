"""The solid shapes of the corpus: procedural superquadrics, pybullet's fused random blobs, named objects.

Blobs and named objects come from the shape cache that ``python -m training.shapes.library`` fills
(``NEUROK_SHAPE_CACHE``, default ``out/shapes``). Only blobs below BLOB_POOL are drawn, so the pool
is fixed once those are fused, whatever else the cache holds: a seed always gives the same shape.
Held-out sequences draw a third each from held-out superquadrics, held-out blobs (index % 10 == 0)
and pybullet's named everyday objects, which no training sequence ever sees.
"""

import os
from pathlib import Path

import numpy as np

from training.shapes.library import HELDOUT_OBJECTS, blob_indices, fused_blob, named_object
from training.shapes.solids import superquadric

from .sequence import HELDOUT_SHAPES

BLOB_POOL = 160  # blob indices below this are drawn (the preprocessing fuses them first)


def shape_cache() -> Path:
    return Path(os.environ.get("NEUROK_SHAPE_CACHE", "out/shapes"))


def blob_pool(split: str) -> list[int]:
    """The fused blobs a sequence of ``split`` may draw; ValueError when the shape cache holds none."""
    pool = [i for i in blob_indices(split, shape_cache()) if i < BLOB_POOL]
    if not pool:
        raise ValueError(f"no fused blobs below {BLOB_POOL} in {shape_cache()}: run python -m training.shapes.library")
    return pool


def random_solid(rng, split: str) -> tuple[str, np.ndarray, np.ndarray]:
    """(shape name, vertices, faces) of a closed solid about 0.2-0.8 m across, deterministic from ``rng``."""
    kinds = ["superquadric", "blob"] + (["named"] if split == "heldout" else [])
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "superquadric":
        shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
        return f"superquadric-{shape_seed}", *superquadric(np.random.default_rng(shape_seed))
    if kind == "named":
        name = HELDOUT_OBJECTS[int(rng.integers(len(HELDOUT_OBJECTS)))]
        vertices, faces = named_object(name, shape_cache())
    else:
        pool = blob_pool(split)
        name = f"blob-{pool[int(rng.integers(len(pool)))]}"
        vertices, faces = fused_blob(int(name.split("-")[1]), shape_cache())
    return name, vertices * rng.uniform(0.6, 1.4), faces
