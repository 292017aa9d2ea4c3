"""Mesh queries the reference simulators need: volumes, rotations, distances to a surface."""

import numpy as np

from neurok_blender.core.mesh import signed_volume, triangle_areas


def enclosed_volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    """Volume inside a closed surface (divergence theorem), whatever its orientation."""
    return abs(signed_volume(vertices, faces))


def axis_rotation(axis, angle: float) -> np.ndarray:
    """Rotation matrix about a unit-normalized axis (Rodrigues)."""
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def surface_samples(vertices: np.ndarray, faces: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """The vertices plus ``count`` area-uniform random points on the triangles (fixed seed)."""
    rng = np.random.default_rng(seed)
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    area = triangle_areas(vertices, faces)
    pick = rng.choice(len(faces), size=count, p=area / area.sum())
    r1, r2 = np.sqrt(rng.random(count))[:, None], rng.random(count)[:, None]
    points = (1 - r1) * a[pick] + r1 * (1 - r2) * b[pick] + r1 * r2 * c[pick]
    return np.concatenate([vertices, points])


def surface_distance(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, chunk: int = 512) -> np.ndarray:
    """Distance from each point to the nearest triangle (closest point on triangle, Ericson 5.1.5)."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    out = np.empty(len(points))
    for start in range(0, len(points), chunk):
        p = points[start:start + chunk, None, :]
        out[start:start + chunk] = np.linalg.norm(p - _closest_on_triangles(p, a, b, c), axis=-1).min(axis=1)
    return out


def _closest_on_triangles(p, a, b, c):
    """Closest points on triangles (T, 3) to points (P, 1, 3): (P, T, 3), by Voronoi regions."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = (ab * ap).sum(-1), (ac * ap).sum(-1)
    bp = p - b
    d3, d4 = (ab * bp).sum(-1), (ac * bp).sum(-1)
    cp = p - c
    d5, d6 = (ab * cp).sum(-1), (ac * cp).sum(-1)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    tiny = 1e-300
    # interior by default
    denom = 1.0 / np.maximum(va + vb + vc, tiny)
    v, w = vb * denom, vc * denom
    result = a + ab * v[..., None] + ac * w[..., None]
    # edges
    t_bc = (d4 - d3) / np.maximum((d4 - d3) + (d5 - d6), tiny)
    on_bc = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
    result = np.where(on_bc[..., None], b + (c - b) * t_bc[..., None], result)
    t_ac = d2 / np.maximum(d2 - d6, tiny)
    on_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
    result = np.where(on_ac[..., None], a + ac * t_ac[..., None], result)
    t_ab = d1 / np.maximum(d1 - d3, tiny)
    on_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
    result = np.where(on_ab[..., None], a + ab * t_ab[..., None], result)
    # vertices
    result = np.where(((d6 >= 0) & (d5 <= d6))[..., None], np.broadcast_to(c, result.shape), result)
    result = np.where(((d3 >= 0) & (d4 <= d3))[..., None], np.broadcast_to(b, result.shape), result)
    result = np.where(((d1 <= 0) & (d2 <= 0))[..., None], np.broadcast_to(a, result.shape), result)
    return result
