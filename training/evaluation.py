"""Replaying the corpus's sequences with the neural solver, and the errors against their references,
shared by the calibration (``training/calibrate.py``) and the benchmarks.

Every error is a distance over the bounding-box diagonal of the sequence's rest mesh: the vertex
error (where the body is) and the shape error (the vertex error left after the best rigid alignment
onto the reference: how it is deformed, whatever its pose).
"""

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from neurok_blender.core.mesh import bbox_diagonal, undirected_edges
from neurok_blender.core.options import DEFORMABLE
from training.corpus.conditions import conditions_of
from training.corpus.shards import read_shard
from training.examples import rigid_alignment
from training.reference.scales import material_conditions
from training.train import usable

SHORT_HORIZON = 0.5  # s: where the trajectory error is read before a chaotic landing's paths part


def frame_at(t: float, fps: float, count: int) -> int:
    """The index of the frame shown at time t (s) in a series of ``count`` frames, the last one past its end."""
    return min(int(round(t * fps)), count - 1)


def pick_sequences(corpus: Path, split: str, per_category: int, spread: int = 7) -> dict[str, list]:
    """``per_category`` usable sequences of each deformable category, every ``spread``-th one (varied shapes)."""
    chosen, seen = defaultdict(list), defaultdict(int)
    for path in sorted(corpus.glob(f"*-{split}-*.npz")):
        for sequence in read_shard(path):
            c = sequence.category
            if c not in DEFORMABLE or len(chosen[c]) >= per_category or not usable(sequence):
                continue
            seen[c] += 1
            if (seen[c] - 1) % spread == 0:
                chosen[c].append(sequence)
    return chosen


def replay_conditions(sequence, **changes):
    """The sequence's conditions for the neural solver: its category, its material as stiffness, damping
    and plasticity scales and the ground friction it had, then ``changes``."""
    return conditions_of(sequence, **{"category": sequence.category,
                                      **material_conditions(sequence.category, sequence.material), **changes})


def diagonal(sequence) -> float:
    """The bounding-box diagonal of the sequence's rest mesh: the unit of every error here."""
    return bbox_diagonal(sequence.rest_vertices)


def errors_over_time(positions: np.ndarray, sequence) -> np.ndarray:
    """Mean distance of the vertices to the reference per frame, over the bounding-box diagonal."""
    reference = sequence.positions[:len(positions)].astype(np.float64)
    return np.linalg.norm(positions - reference, axis=-1).mean(-1) / diagonal(sequence)


def shape_error(ours: np.ndarray, reference: np.ndarray, size: float) -> float:
    """Mean vertex distance to the reference after the best rigid alignment onto it, over ``size``
    (the diagonal): how wrong the shape is, whatever the pose."""
    ours, reference = ours.astype(np.float64), reference.astype(np.float64)
    rotation, translation = rigid_alignment(ours, reference, np.ones(len(ours)))
    return float(np.linalg.norm(ours @ rotation.T + translation - reference, axis=-1).mean() / size)


def peak_shape_change(positions: np.ndarray, sequence) -> float:
    """The largest over the frames of ``shape_error`` against the sequence's rest shape: how far a
    motion bends the body at most, whatever its pose."""
    size = diagonal(sequence)
    return max(shape_error(frame, sequence.rest_vertices, size) for frame in positions)


def mesh_edges(faces: np.ndarray) -> np.ndarray:
    """Each edge of the triangles once (E, 2)."""
    directed, key = undirected_edges(faces)
    return directed[np.unique(key, return_index=True)[1]]


def edge_strain(rest: np.ndarray, shape: np.ndarray, faces: np.ndarray) -> float:
    """The 95th percentile over the mesh's edges of |length / rest length - 1|: how far a shape
    stretches or squeezes its surface (cloth keeps it within a few per cent). Edges of no rest length
    (a degenerate triangle's) are left out."""
    a, b = mesh_edges(faces).T
    lengths = np.linalg.norm(rest[a] - rest[b], axis=1)
    kept = lengths > 0
    ratio = np.linalg.norm(shape[a] - shape[b], axis=1)[kept] / lengths[kept]
    return float(np.percentile(np.abs(ratio - 1.0), 95))


def peak_strain(positions: np.ndarray, sequence) -> float:
    """The largest over the frames of ``edge_strain`` against the sequence's rest mesh."""
    rest = sequence.rest_vertices.astype(np.float64)
    return max(edge_strain(rest, frame.astype(np.float64), sequence.faces) for frame in positions)


def shape_errors_over_time(positions: np.ndarray, sequence) -> np.ndarray:
    """``shape_error`` per frame."""
    size = diagonal(sequence)
    return np.array([shape_error(ours, reference, size) for ours, reference in zip(positions, sequence.positions)])


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value
