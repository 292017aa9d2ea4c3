"""Mirror symmetry of a body across vertical planes: which reflections map it onto itself.

A reflection g = diag(g_x, g_y, 1), g_x, g_y = +-1, acts through the bounding-box centre c:

    g(x) = c + g (x - c)

across the vertical plane normal to world x (g_x = -1) and / or y (g_y = -1). The body's mirror group
G holds the identity and every such g that maps its vertex set onto itself (each reflected vertex lies
within TOLERANCE of the bounding-box diagonal of a vertex), closed under products: |G| = 1, 2 or 4.
Only these planes: gravity is along -z, so a reflection that fixes z is the only kind that can leave a
drop's conditions (gravity, a horizontal ground) symmetric too.

What it is for (the invariant ``neural.py`` and ``mass_points.py`` keep): mirror-equivariance. For a
body with group G, and conditions that G leaves unchanged (no push or spin off the planes), the
simulated motion commutes with every g in G: x_i(t) = g(x_{g i}(t)), so the centre of mass stays on
the planes' intersection and the body neither drifts across them nor turns out of them.
"""

import hashlib
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

TOLERANCE = 1e-6  # of the bounding-box diagonal: how near a reflected vertex must fall to a vertex
PLANES = (0, 1)  # world axes the mirror planes are normal to (the vertical ones: gravity is along -z)


@dataclass(frozen=True)
class MirrorGroup:
    """G: the reflections (|G|, 3), each the diagonal of g, the identity first, through ``center`` (3,)."""

    center: np.ndarray
    signs: np.ndarray

    @classmethod
    def identity(cls) -> "MirrorGroup":
        """G = {1}: a body without mirror planes (everything then runs as if there were no G)."""
        return cls(np.zeros(3), np.ones((1, 3)))

    @property
    def size(self) -> int:
        return len(self.signs)

    def reflect(self, points, index: int):
        """g(x) = c + g (x - c) for the ``index``-th reflection of G, numpy (..., 3) or torch (B, P, 3);
        the identity (index 0) returns ``points`` themselves, not a rounded copy."""
        if index == 0:
            return points
        if isinstance(points, torch.Tensor):
            center = torch.as_tensor(self.center, dtype=points.dtype)
            return center + (points - center) * torch.as_tensor(self.signs[index], dtype=points.dtype)
        return self.center + (np.asarray(points) - self.center) * self.signs[index]

    def images(self, points: np.ndarray) -> np.ndarray:
        """g(x) for every g in G: (|G|, ..., 3), the points themselves first."""
        return np.stack([self.reflect(points, i) for i in range(self.size)])

    def vertex_images(self, vertices: np.ndarray, indices: np.ndarray | None = None) -> np.ndarray:
        """(|G|, V): the index of the vertex nearest to g(v) for each vertex v (its mirror image), or
        (|G|, N) for the vertices ``indices`` only."""
        tree = cKDTree(vertices)
        chosen = vertices if indices is None else vertices[indices]
        return np.stack([tree.query(self.reflect(chosen, i))[1] for i in range(self.size)])


def find_mirrors(vertices: np.ndarray, tolerance: float = TOLERANCE) -> MirrorGroup:
    """G of a mesh (world space): the identity, and each reflection across a vertical plane through the
    bounding-box centre that maps the vertex set onto itself, with their product when both do. The
    last mesh's group is kept: a build asks for it twice (its contact points, its learned map), and
    each answer costs a k-d tree query of every vertex per plane."""
    vertices = np.ascontiguousarray(vertices, dtype=np.float64)
    key = (hashlib.blake2b(vertices.tobytes(), digest_size=16).digest(), vertices.shape, tolerance)
    last = _last_found[0]
    if last is not None and last[0] == key:
        return last[1]
    low, high = vertices.min(0), vertices.max(0)
    center, diagonal = (low + high) / 2, float(np.linalg.norm(high - low))
    tree = cKDTree(vertices)
    signs = [np.ones(3)]
    for axis in PLANES:
        g = np.ones(3)
        g[axis] = -1.0
        # within the tolerance or not at all (inf): a bounded search prunes the tree early
        reach = tolerance * diagonal
        distance = tree.query(center + (vertices - center) * g, distance_upper_bound=np.nextafter(reach, np.inf))[0]
        if distance.max() <= reach:
            signs += [h * g for h in signs]  # the group generated so far, and its product with g
    group = MirrorGroup(center, np.stack(signs))
    _last_found[0] = (key, group)  # one assignment: safe across the solve's and the interface's threads
    return group


_last_found: list = [None]  # (key, group) of find_mirrors' last mesh
