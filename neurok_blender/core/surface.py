"""Points on a mesh surface for the model: area-uniform samples, evenly spread query points, parts.

Every sample remembers its triangle and barycentric coordinates, so any per-vertex quantity (a
deformed frame during training) is carried to it exactly by interpolation.
"""

from dataclasses import dataclass

import numpy as np

from .mesh import cross, farthest_points, triangle_areas


@dataclass
class SurfaceSamples:
    points: np.ndarray  # (N, 3)
    normals: np.ndarray  # (N, 3) unit, the triangle's
    faces: np.ndarray  # (N,) triangle index
    barycentric: np.ndarray  # (N, 3)

    def interpolate(self, per_vertex: np.ndarray, triangles: np.ndarray) -> np.ndarray:
        """A per-vertex array (..., V, C) at the samples (..., N, C)."""
        corners = per_vertex[..., triangles[self.faces], :]  # (..., N, 3, C)
        return (corners * self.barycentric[:, :, None]).sum(-2)

    def subset(self, keep) -> "SurfaceSamples":
        return SurfaceSamples(self.points[keep], self.normals[keep], self.faces[keep], self.barycentric[keep])


def sample_surface(vertices: np.ndarray, faces: np.ndarray, count: int, rng: np.random.Generator,
                   triangle_mask: np.ndarray | None = None) -> SurfaceSamples:
    """``count`` points uniform by area (on the masked triangles only, when given)."""
    area = triangle_areas(vertices, faces)
    if triangle_mask is not None:
        area = np.where(triangle_mask, area, 0.0)
    if area.sum() <= 0:
        raise ValueError("the surface has no area to sample")
    chosen = rng.choice(len(faces), size=count, p=area / area.sum())
    u, v = rng.random(count), rng.random(count)
    root = np.sqrt(u)  # uniform on a triangle: (1 - sqrt u, sqrt u (1 - v), sqrt u v)
    bary = np.stack([1 - root, root * (1 - v), root * v], 1)
    a, b, c = (vertices[faces[chosen, k]] for k in range(3))
    normal = cross(b - a, c - a)
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-30)
    return SurfaceSamples(bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c, normal, chosen, bary)


def spread_queries(vertices, faces, triangle_parts, count: int, rng, oversample: int = 8) -> SurfaceSamples:
    """``count`` query points spread evenly over the surface, every part getting its share of the
    area (at least one): farthest-point sampling inside each part from a dense random sample."""
    parts, inverse = np.unique(triangle_parts, return_inverse=True)
    if len(parts) > count:
        raise ValueError(f"the mesh has {len(parts)} loose parts, more than the model's {count} query points")
    area = np.bincount(inverse, weights=triangle_areas(vertices, faces), minlength=len(parts))
    share = np.maximum(1, np.floor(count * area / area.sum())).astype(int)
    while share.sum() > count:
        share[np.argmax(share)] -= 1
    for i in np.argsort(-(count * area / area.sum() - share))[: count - share.sum()]:
        share[i] += 1  # largest remainders take what is left
    picked = []
    for p, n in enumerate(share):
        dense = sample_surface(vertices, faces, n * oversample, rng, inverse == p)
        picked.append(dense.subset(farthest_points(dense.points, n)))
    return SurfaceSamples(*(np.concatenate([getattr(s, f) for s in picked]) for f in
                            ("points", "normals", "faces", "barycentric")))
