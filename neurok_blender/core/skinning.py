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


@dataclass
class Skinning:
    """Which queries (V, K) drive each vertex and with what weights (V, K), rows summing to 1; a batch
    of objects stacks them to (B, V, K). ``blend``, for points that are only drawn (``drawn``), holds
    the same weights as a sparse (V, Q) matrix: one sparse product then blends every vertex, three to
    four times as fast as gathering K neighbours at 100k vertices, but no derivative goes through it."""

    index: torch.Tensor
    weight: torch.Tensor
    blend: torch.Tensor | None = None

    def to(self, device) -> "Skinning":
        return Skinning(self.index.to(device), self.weight.to(device),
                        None if self.blend is None else self.blend.to(device))

    def drawn(self, queries: int) -> "Skinning":
        """This skinning (one object's, (V, K)) with its sparse blend over ``queries`` query points."""
        rows = torch.arange(len(self.index))[:, None].expand_as(self.index)
        blend = torch.sparse_coo_tensor(torch.stack([rows.reshape(-1), self.index.reshape(-1)]),
                                        self.weight.reshape(-1), (len(self.index), queries), check_invariants=True)
        with warnings.catch_warnings():  # torch calls its compressed rows beta; a product with them is all we use
            warnings.simplefilter("ignore", UserWarning)
            return Skinning(self.index, self.weight, blend.coalesce().to_sparse_csr())


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
    weight = skin.weight.to(points.dtype)[..., None]  # (..., V, K, 1)

    def gather(values):  # (..., Q, C) -> (..., V, K, C)
        if skin.index.dim() == 2:
            return values[..., skin.index, :]
        batch = torch.arange(len(skin.index), device=values.device)[:, None, None]
        return values[batch, skin.index]

    def blended(values):  # (..., Q, C) -> (..., V, C): sum_k a_k values[index_k]
        if skin.blend is None:
            return (gather(values) * weight).sum(-2)
        flat = values.movedim(-2, 0)  # (Q, ..., C)
        out = skin.blend.to(values.dtype) @ flat.reshape(len(flat), -1)
        return out.reshape(-1, *flat.shape[1:]).movedim(0, -2)

    if not dual_quaternion:
        return points + blended(displacement)
    r = quaternion_from_rotation_vector(rotation)  # (..., Q, 4)
    tau = queries + displacement - rotate(r, queries)
    d = 0.5 * quaternion_multiply(torch.cat([torch.zeros_like(tau[..., :1]), tau], -1), r)
    return _dual_quaternion_motion(blended(torch.cat([r, d], -1)), points)  # all r have w >= 0: one hemisphere


def _dual_quaternion_motion(blend: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """The points (..., V, 3) moved by their blended dual quaternions (r, d) (..., V, 8), normalized
    by |r|: x' = R(r) x + tau, R(r) x = x + w t + v x t with t = 2 v x x, and tau = 2 vec(d r*) =
    2 (w_r v_d - w_d v_r + v_r x v_d). Written per component: on a mesh's many vertices the cross
    products' and quaternion products' small (V, 3) and (V, 4) tensors cost more than the arithmetic."""
    rw, rx, ry, rz, dw, dx, dy, dz = blend.unbind(-1)
    norm = torch.rsqrt(rw * rw + rx * rx + ry * ry + rz * rz)
    rw, rx, ry, rz, dw, dx, dy, dz = (c * norm for c in (rw, rx, ry, rz, dw, dx, dy, dz))
    px, py, pz = points.unbind(-1)
    tx, ty, tz = 2 * (ry * pz - rz * py), 2 * (rz * px - rx * pz), 2 * (rx * py - ry * px)
    return torch.stack([px + rw * tx + ry * tz - rz * ty + 2 * (rw * dx - dw * rx + ry * dz - rz * dy),
                        py + rw * ty + rz * tx - rx * tz + 2 * (rw * dy - dw * ry + rz * dx - rx * dz),
                        pz + rw * tz + rx * ty - ry * tx + 2 * (rw * dz - dw * rz + rx * dy - ry * dx)], -1)
