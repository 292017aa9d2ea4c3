"""Training examples for the NeuROK model: pairs of frames of one sequence, augmented, in model units.

One example: the mesh at frame a is the static shape M0; frame b, moved rigidly back onto frame a
(mass-weighted Kabsch), is the deformation target, because the solver carries rigid motion in its
own coordinates (p, R) and the model only has to learn the rest. Augmentation (``augmentation``): a
random turn about the gravity axis, fresh random point samples every time, and for solids and
continua a random stretch along each axis (a new shape, deformed as a stretched body of the same
material might be), applied after frame b is moved back: a stretch does not commute with a turn, so
stretched frames A x_a, A R x_a of a body that only tumbled would differ by a shear. Sheets and
hinged objects are turned only: their simulators keep edge lengths and parts rigid, and a stretch
scales an edge that a fold or a swinging part turns from x towards z by e^(s_z - s_x).

Pairs are drawn uniformly over the frames, or (``pairs="by-change"``) with frame b drawn in proportion
to its shape change c_b from the first frame (after the best rigid fit, over the diagonal) plus
RIGID_FLOOR of their mean: most frames of a landing are nearly rigid, and a uniform draw spends most
examples teaching the model that nothing moves.
"""

from dataclasses import dataclass

import numpy as np

from neurok_blender.core.mesh import loose_parts
from neurok_blender.core.model import ModelConfig, part_centroids_of
from neurok_blender.core.skinning import skinning
from neurok_blender.core.surface import sample_surface, spread_queries
from training.corpus.sequence import Sequence

REST_FRAME_SHARE = 0.5  # how often M0 is the first frame (the artist's rest mesh), else any frame
EVALUATION_POINTS = 1024
PAIRS = ("uniform", "by-change")  # how an example's frame b is drawn
KEEPS_LENGTHS = ("articulated", "cloth")  # categories turned, never stretched
AUGMENTATION = "turn; aligned, then stretched but sheets and hinges"  # recorded with a run (a resume draws alike)
RIGID_FLOOR = 0.25  # by-change: of the mean change, added to every frame's, so rigid frames still come up


@dataclass
class Prepared:
    """What a sequence needs for fast example making."""

    sequence: Sequence
    vertex_parts: np.ndarray
    triangle_parts: np.ndarray
    change: np.ndarray  # (T,) each frame's shape change from the first (``shape_change``)


def prepare(sequence: Sequence) -> Prepared:
    parts = sequence.part_ids if sequence.part_ids is not None else loose_parts(sequence.faces, len(sequence.rest_vertices))
    parts = np.unique(parts, return_inverse=True)[1]
    return Prepared(sequence, parts, parts[sequence.faces[:, 0]], shape_change(sequence))


def shape_change(sequence: Sequence) -> np.ndarray:
    """(T,) each frame's mass-weighted RMS distance from the first frame, the frame moved onto it by
    its best rigid fit (``rigid_alignment``), over the first frame's bounding-box diagonal."""
    frames = sequence.positions.astype(np.float64)
    w = sequence.masses.astype(np.float64) / sequence.masses.sum()
    diagonal = max(float(np.linalg.norm(np.ptp(frames[0], axis=0))), 1e-30)
    change = []
    for frame in frames:
        rotation, shift = rigid_alignment(frame, frames[0], w)
        change.append(np.sqrt(w @ ((frame @ rotation.T + shift - frames[0]) ** 2).sum(1)) / diagonal)
    return np.array(change)


def draw_pair(item: Prepared, rng, pairs: str = "uniform") -> tuple[int, int]:
    """Frames (a, b) of one example: a the first frame REST_FRAME_SHARE of the time, else any; b any,
    or with ``pairs="by-change"`` in proportion to its change plus RIGID_FLOOR of the mean."""
    if pairs not in PAIRS:
        raise ValueError(f"pairs must be one of {', '.join(PAIRS)}, got {pairs!r}")
    frames = len(item.sequence.positions)
    a = 0 if rng.random() < REST_FRAME_SHARE else int(rng.integers(frames))
    if pairs == "uniform":
        return a, int(rng.integers(frames))
    weight = item.change + RIGID_FLOOR * item.change.mean() + 1e-12
    return a, int(rng.choice(frames, p=weight / weight.sum()))


def rigid_alignment(source, target, weights):
    """R, t minimizing sum w |R source + t - target|^2 (Kabsch, reflection excluded)."""
    w = weights / weights.sum()
    cs, ct = w @ source, w @ target
    h = ((source - cs) * w[:, None]).T @ (target - ct)
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    rotation = vt.T @ np.diag([1.0, 1.0, d]) @ u.T
    return rotation, ct - rotation @ cs


def aligned(target: np.ndarray, shape: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """``target`` moved rigidly onto ``shape`` (``rigid_alignment``)."""
    rotation, shift = rigid_alignment(target, shape, masses)
    return target @ rotation.T + shift


def augmentation(category: str, rng) -> np.ndarray:
    """The matrix both frames of an example are multiplied by: a turn about the gravity axis, times a
    stretch along each axis by e^s_i, s_i uniform in [-1/4, 1/4], unless the category KEEPS_LENGTHS."""
    turn = rng.uniform(0, 2 * np.pi)
    c, s = np.cos(turn), np.sin(turn)
    stretch = np.eye(3) if category in KEEPS_LENGTHS else np.diag(np.exp(rng.uniform(-0.25, 0.25, 3)))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ stretch


def make_example(item: Prepared, rng, config: ModelConfig, augment: bool = True, pairs: str = "uniform") -> dict:
    s = item.sequence
    a, b = draw_pair(item, rng, pairs)
    shape, target = s.positions[a].astype(np.float64), s.positions[b].astype(np.float64)
    masses = s.masses.astype(np.float64)
    target = aligned(target, shape, masses)  # before a stretch, which does not commute with the body's turn
    if augment:
        transform = augmentation(s.category, rng)
        shape, target = shape @ transform.T, target @ transform.T
        if s.category not in KEEPS_LENGTHS:  # a stretched pair may fit a little better turned
            target = aligned(target, shape, masses)
    low, high = shape.min(0), shape.max(0)
    center, scale = (low + high) / 2, np.linalg.norm(high - low)
    shape, target = (shape - center) / scale, (target - center) / scale

    faces = s.faces
    samples = sample_surface(shape, faces, config.encoder_points, rng)
    queries = spread_queries(shape, faces, item.triangle_parts, config.queries, rng)
    evaluation = sample_surface(shape, faces, EVALUATION_POINTS, rng)
    sample_parts, query_parts = item.triangle_parts[samples.faces], item.triangle_parts[queries.faces]
    centroids = part_centroids_of(np.concatenate([samples.points, queries.points]), np.concatenate([sample_parts, query_parts]))
    skin = skinning(evaluation.points, queries.points, item.triangle_parts[evaluation.faces], query_parts,
                    config.neighbours)
    return {
        "points": samples.points, "normals": samples.normals, "offsets": samples.points - centroids[sample_parts],
        "deformation": samples.interpolate(target, faces) - samples.points,
        "queries": queries.points, "query_normals": queries.normals,
        "query_offsets": queries.points - centroids[query_parts],
        "evaluation": evaluation.points, "targets": evaluation.interpolate(target, faces),
        "skin_index": skin.index.numpy(), "skin_weight": skin.weight.numpy(),
    }


def collate(examples: list[dict]) -> dict:
    return {k: np.stack([e[k] for e in examples]) for k in examples[0]}
