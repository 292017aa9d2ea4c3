"""Deformations predicted at a few query points, carried to every vertex (any mesh resolution).

Each query point j predicts a rigid motion about itself, a rotation vector w_j and a displacement t_j:

    T_j(x) = x_j + t_j + R(w_j) (x - x_j)

A vertex follows its K nearest queries of the same part, blended with inverse-distance weights a_j:
as dual quaternions (DQ skinning: the blend of rigid motions stays rigid, so a turning lid or a bent
arm keeps its volume; the paper's choice) or, the ablation, as a plain blend of displacements
sum_j a_j t_j. A dual quaternion is (r, d) with r the rotation quaternion and d = 1/2 (0, tau) r for
the translation tau = x_j + t_j - R x_j.

Everything is written with elementwise torch operations so forward-mode derivatives (jvp) work.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

NEIGHBOURS = 4
DRAWN_ROWS = 32768  # points per block of a drawn set: a block's temporaries stay in the CPU's cache
# A drawn set blends and moves in single precision: the drawn frames are float32 anyway, and a
# deformation of a body of size L is off by about 1e-7 L, where double precision made every frame's
# pass through a million vertices' blocks twice the memory traffic
DRAWN_DTYPE = torch.float32


@dataclass
class Skinning:
    """Which queries (V, K) drive each vertex and with what weights (V, K), rows summing to 1; a batch
    of objects stacks them to (B, V, K). ``blend``, for a block of points that are only drawn
    (``drawn``), holds the same weights as a sparse (rows, Q) matrix: one sparse product then blends
    the block, three to four times as fast as gathering K neighbours, but no derivative goes through it."""

    index: torch.Tensor
    weight: torch.Tensor
    blend: torch.Tensor | None = None

    def to(self, device) -> "Skinning":
        return Skinning(self.index.to(device), self.weight.to(device),
                        None if self.blend is None else self.blend.to(device))

    def drawn(self, queries: int) -> list[tuple[slice, "Skinning"]]:
        """This skinning (one object's, (V, K)) in blocks of DRAWN_ROWS points, each with its sparse blend
        over ``queries`` query points, weights in DRAWN_DTYPE: (the block's rows, its skinning). A mesh
        drawn block by block keeps every temporary of a frame in the cache, where whole (V, 8) ones
        each cost a trip through memory."""
        blocks = []
        for start in range(0, len(self.index), DRAWN_ROWS):
            rows = slice(start, min(start + DRAWN_ROWS, len(self.index)))
            index, weight = self.index[rows], self.weight[rows].to(DRAWN_DTYPE)
            # compressed rows straight from the neighbours: each row's queries in ascending order, the
            # zero weights of a part with fewer than K queries left out (no repeated column)
            columns, order = index.sort(1)
            weights = weight.gather(1, order)
            kept = weights != 0
            counts = torch.zeros(len(index) + 1, dtype=torch.int64)
            counts[1:] = kept.sum(1).cumsum(0)
            with warnings.catch_warnings():  # torch calls its compressed rows beta; a product with them is all we use
                warnings.simplefilter("ignore", UserWarning)
                blend = torch.sparse_csr_tensor(counts, columns[kept], weights[kept], (len(index), queries),
                                                check_invariants=True)
            blocks.append((rows, Skinning(index, weight, blend)))
        return blocks

    def blended(self, values: torch.Tensor) -> torch.Tensor:
        """sum_k a_k values[index_k] (..., V, C) of per-query values (..., Q, C)."""
        if self.blend is None:
            if self.index.dim() == 2:
                gathered = values[..., self.index, :]
            else:
                gathered = values[torch.arange(len(self.index), device=values.device)[:, None, None], self.index]
            return (gathered * self.weight.to(values.dtype)[..., None]).sum(-2)
        flat = values.movedim(-2, 0)  # (Q, ..., C)
        out = self.blend.to(values.dtype) @ flat.reshape(len(flat), -1)
        return out.reshape(-1, *flat.shape[1:]).movedim(0, -2)


def skinning(vertices: np.ndarray, queries: np.ndarray, vertex_parts: np.ndarray | None = None,
             query_parts: np.ndarray | None = None, k: int = NEIGHBOURS) -> Skinning:
    """K nearest queries of each vertex (same part only, when parts are given), weights 1 / (d + eps)^2.

    A part with fewer queries than K uses the ones it has (the rest get zero weight); a part with no
    query at all is an error, since nothing could move it. Nearest by a k-d tree per part (scipy's,
    which torchdiffeq already brings): a 100k-vertex mesh in a fraction of a second.
    """
    vertices, queries = np.asarray(vertices, np.float64), np.asarray(queries, np.float64)
    if vertex_parts is None:
        vertex_parts, query_parts = np.zeros(len(vertices), int), np.zeros(len(queries), int)
    missing = np.setdiff1d(np.unique(vertex_parts), np.unique(query_parts))
    if len(missing):
        raise ValueError(f"parts {missing.tolist()} have no query point to follow")
    k = min(k, len(queries))
    scale = np.ptp(queries, axis=0).max() + 1e-12
    index, distance = np.zeros((len(vertices), k), np.int64), np.full((len(vertices), k), np.inf)
    for part in np.unique(vertex_parts):
        members, followed = np.flatnonzero(vertex_parts == part), np.flatnonzero(query_parts == part)
        near = min(k, len(followed))
        d, nearest = cKDTree(queries[followed]).query(vertices[members], k=near)
        index[members, :near] = followed[nearest.reshape(len(members), near)]
        distance[members, :near] = d.reshape(len(members), near)
    weight = np.where(np.isfinite(distance), 1.0 / (distance / scale + 1e-3) ** 2, 0.0)
    return Skinning(torch.from_numpy(index), torch.from_numpy(weight / weight.sum(1, keepdims=True)))


def quaternion_from_rotation_vector(w: torch.Tensor) -> torch.Tensor:
    """(cos(|w|/2), sin(|w|/2) w/|w|) as (..., 4), w first; below |w|^2 = 1e-8 the factor
    sin(|w|/2)/|w| is its two-term series 1/2 - |w|^2/48, exact to float64 there and smooth."""
    angle2 = (w * w).sum(-1, keepdim=True)
    half = 0.5 * torch.sqrt(angle2 + 1e-24)
    small = angle2 < 1e-8
    sinc = torch.where(small, 0.5 - angle2 / 48.0, torch.sin(half) / (2 * half))  # sin(a/2) / a
    return torch.cat([torch.cos(half), sinc * w], -1)


def quaternion_multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                        aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], -1)


def rotate(q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Rotate x (..., 3) by the unit quaternion q (..., 4): x + 2 r x (r x x + w x)."""
    w, r = q[..., :1], q[..., 1:]
    r, x = torch.broadcast_tensors(r, x)  # cross does not broadcast
    return x + 2 * torch.cross(r, torch.cross(r, x, dim=-1) + w * x, dim=-1)


def deform(queries: torch.Tensor, rotation: torch.Tensor, displacement: torch.Tensor, points: torch.Tensor,
           skin: Skinning, dual_quaternion: bool = True) -> torch.Tensor:
    """Deformed positions of ``points`` (..., V, 3) from per-query motions (..., Q, 3) each.

    ``queries`` (..., Q, 3) are the query points at rest; batch dimensions broadcast.
    """
    values = query_motions(queries, rotation, displacement, dual_quaternion)
    return moved_by(skin.blended(values), points, dual_quaternion)


def query_motions(queries, rotation, displacement, dual_quaternion: bool = True) -> torch.Tensor:
    """What the points blend of each query's motion (..., Q, C): its dual quaternion (r, d), C = 8, or
    its displacement alone, C = 3 (the ablation)."""
    if not dual_quaternion:
        return displacement
    r = quaternion_from_rotation_vector(rotation)  # (..., Q, 4)
    tau = queries + displacement - rotate(r, queries)
    d = 0.5 * quaternion_multiply(torch.cat([torch.zeros_like(tau[..., :1]), tau], -1), r)
    return torch.cat([r, d], -1)  # all r have w >= 0: one hemisphere


def moved_by(blend: torch.Tensor, points: torch.Tensor, dual_quaternion: bool = True) -> torch.Tensor:
    """The points (..., V, 3) moved by their blend of ``query_motions`` (..., V, C)."""
    return _dual_quaternion_motion(blend, points) if dual_quaternion else points + blend


def displaced_by(blend: torch.Tensor, points: torch.Tensor, dual_quaternion: bool = True) -> torch.Tensor:
    """``moved_by`` less the points, x' - x, its rounding that of the motion alone, not of x."""
    return _dual_quaternion_motion(blend, points, displacement=True) if dual_quaternion else blend


def _dual_quaternion_motion(blend: torch.Tensor, points: torch.Tensor, displacement: bool = False) -> torch.Tensor:
    """The points (..., V, 3) moved by their blended dual quaternions (..., V, 8) (``dual_quaternion_moves``;
    x' - x with ``displacement``)."""
    px, py, pz = channels(points)
    moves = dual_quaternion_moves(channels(blend), (px, py, pz))
    return torch.stack(moves if displacement else [px + moves[0], py + moves[1], pz + moves[2]], -1)


def channels(values: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The last axis's channels of ``values`` (..., C), each contiguous: on a mesh's many vertices the
    small (V, 3) and (V, 8) tensors' strided products cost more than the arithmetic."""
    return tuple(c.contiguous() for c in values.unbind(-1))


def dual_quaternion_moves(blend, points) -> list[torch.Tensor]:
    """x' - x, channel by channel, for points x = (px, py, pz) moved by their blended dual quaternions
    (r, d) = (r_w, v, d_w, v_d) (8 channels, each (..., V)), normalized by |r|: x' = R(r) x + tau with
    R(r) x = x + r_w t + v x t, t = 2 v x x, and tau = 2 (r_w v_d - d_w v + v x v_d). Unnormalized,
    both are quadratic in (r, d) over |r|^2:

        x' = x + (r_w u + v x u - 2 d_w v) / |r|^2,    u = 2 (v x x + v_d)"""
    rw, vx, vy, vz, dw, dx, dy, dz = blend
    px, py, pz = points
    ux, uy, uz = 2 * (vy * pz - vz * py + dx), 2 * (vz * px - vx * pz + dy), 2 * (vx * py - vy * px + dz)
    inverse, pull = 1 / (rw * rw + vx * vx + vy * vy + vz * vz), -2 * dw
    return [(rw * ux + vy * uz - vz * uy + pull * vx) * inverse, (rw * uy + vz * ux - vx * uz + pull * vy) * inverse,
            (rw * uz + vx * uy - vy * ux + pull * vz) * inverse]
