"""Tetrahedral meshes for FEM, and the barycentric embedding that carries a surface along.

wildmeshing (TetWild, MPL-2.0) fills any closed, even messy, surface with positively oriented tets;
it measured 6/6 on the research note's difficult meshes, where tetgen failed 4/6. Its output differs
from run to run (measured: 203 vs 200 nodes for the same input), so the corpus, which must repeat
exactly from its seeds, fills its star-shaped procedural solids with ``layered_tets`` instead.
"""

import contextlib
import os
import sys
import tempfile

import numpy as np


def tetrahedralize(vertices: np.ndarray, faces: np.ndarray, edge_length: float = 0.1):
    """Tets filling the surface; ``edge_length`` is relative to the bounding-box diagonal."""
    import wildmeshing

    with tetwild_quietly():
        tet = wildmeshing.Tetrahedralizer(stop_quality=10, edge_length_r=edge_length, max_threads=1)
        tet.set_log_level(6)
        tet.set_mesh(np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int32))
        tet.tetrahedralize()
        points, tets = tet.get_tet_mesh()[:2]
    used = np.unique(tets)  # drop points that no tet uses
    remap = np.full(len(points), -1)
    remap[used] = np.arange(len(used))
    points, tets = points[used], remap[tets]
    flip = tet_volumes(points, tets) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return points, tets


def layered_tets(vertices: np.ndarray, faces: np.ndarray, layers: int = 3):
    """Tets of a surface that is star-shaped about its vertex centroid, deterministic (unlike TetWild).

    Nodes: the centre, then ``layers`` shrunken copies of the surface at radius fractions k / layers.
    Each surface triangle gives one tet to the centre and, between consecutive layers, a prism cut
    into three tets along diagonals chosen by vertex index, so neighbouring prisms share faces.
    """
    center = vertices.mean(0)
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    if (np.einsum("fi,fi->f", a - center, np.cross(b - a, c - a)) <= 0).any():
        raise ValueError("the surface is not star-shaped about its centroid; use tetrahedralize()")
    n = len(vertices)
    fractions = np.arange(1, layers + 1) / layers
    points = np.concatenate([center[None], *(center + f * (vertices - center) for f in fractions)])

    def node(layer, vertex):  # layer 1..layers
        return 1 + (layer - 1) * n + vertex

    ordered = np.sort(faces, axis=1)
    v0, v1, v2 = ordered.T
    tets = [np.stack([np.zeros_like(v0), node(1, v0), node(1, v1), node(1, v2)], 1)]
    for layer in range(1, layers):
        lo, hi = layer, layer + 1
        tets += [np.stack([node(lo, v0), node(lo, v1), node(lo, v2), node(hi, v2)], 1),
                 np.stack([node(lo, v0), node(lo, v1), node(hi, v1), node(hi, v2)], 1),
                 np.stack([node(lo, v0), node(hi, v0), node(hi, v1), node(hi, v2)], 1)]
    tets = np.concatenate(tets)
    flip = tet_volumes(points, tets) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return points, tets


def tet_volumes(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    a, b, c, d = (points[tets[:, k]] for k in range(4))
    return np.einsum("ti,ti->t", b - a, np.cross(c - a, d - a)) / 6.0


def embed(points: np.ndarray, tet_points: np.ndarray, tets: np.ndarray, chunk: int = 256):
    """For each point, the tet that holds it best and its barycentric coordinates (which sum to 1).

    A point outside every tet (the tet surface only approximates the input) takes the tet whose
    smallest barycentric coordinate is largest, and extrapolates slightly from it.
    """
    a = tet_points[tets[:, 0]]
    edges = np.stack([tet_points[tets[:, k]] - a for k in (1, 2, 3)], -1)  # (T, 3, 3)
    inverse = np.linalg.inv(edges)
    index = np.empty(len(points), dtype=np.int64)
    weights = np.empty((len(points), 4))
    for start in range(0, len(points), chunk):
        p = points[start:start + chunk]
        local = np.einsum("tij,ptj->pti", inverse, p[:, None, :] - a[None])  # (P, T, 3)
        bary = np.concatenate([1 - local.sum(-1, keepdims=True), local], -1)
        best = np.argmax(bary.min(-1), axis=1)
        index[start:start + chunk] = best
        weights[start:start + chunk] = bary[np.arange(len(p)), best]
    return index, weights


@contextlib.contextmanager
def tetwild_quietly():
    """Run TetWild quietly in a temporary folder: it prints its progress from C++ to file descriptors 1
    and 2, past Python's sys.stdout/stderr, and writes __tracked_surface.stl into the working
    directory. Python exceptions still rise."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
