"""Category "auto": what kind of body a mesh looks like, read from its surface alone.

    open sheet              -> cloth        holes span more than HOLE_SHARE of its surface area
    one solid, or a main    -> elastic      closed up to small holes (eye sockets, a welded seam)
    solid with small parts
    comparable solid parts  -> articulated  at least two parts hold PART_SHARE of the volume each

A continuum body (snow, clay, sand) looks like a solid: it is never guessed.
"""

import numpy as np

from .mesh import bbox_diagonal, cross, loose_parts, tetrahedron_volumes, triangle_areas, undirected_edges

HOLE_SHARE = 0.05  # of the surface area: a solid modelled with small openings stays a solid
PART_SHARE = 0.2  # of the volume: a part that small (eyes, a handle) rides on the main one
WELD = 1e-7  # of the bounding-box diagonal: vertices this close are one (split at UV or normal seams)


def resolve_category(category: str, vertices: np.ndarray, faces: np.ndarray) -> tuple[str, str]:
    """The category to simulate and, for "auto", why it was chosen ("" for a category given)."""
    if category != "auto":
        return category, ""
    faces = welded(vertices, faces)
    area = float(triangle_areas(vertices, faces).sum())
    holes = hole_area(vertices, faces)
    if holes > HOLE_SHARE * area:
        return "cloth", f"auto chose cloth: an open surface (its openings span {holes / area:.0%} of its area)"
    parts = loose_parts(faces, len(vertices))[faces[:, 0]]
    volumes = np.abs(np.bincount(parts, weights=tetrahedron_volumes(vertices - vertices.mean(0), faces)))
    shares = np.sort(volumes / max(volumes.sum(), 1e-300))[::-1]
    if len(shares) > 1 and shares[1] >= PART_SHARE:
        return "articulated", (f"auto chose articulated: {len(shares)} loose parts, the two largest "
                               f"{shares[0]:.0%} and {shares[1]:.0%} of the volume")
    shape = "a closed solid" if holes == 0 else f"a solid (its openings span {holes / area:.0%} of its area)"
    if len(shares) > 1:
        shape += (f" of {len(shares)} loose parts, one with {shares[0]:.0%} of the volume "
                  "(Category: Articulated moves the parts on hinges)")
    return "elastic", f"auto chose elastic: {shape}"


def welded(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """``faces`` with each vertex replaced by the first one at the same position (to WELD of the size):
    importers split vertices along UV and normal seams, which would open a closed surface."""
    key = np.round(vertices / max(WELD * bbox_diagonal(vertices), 1e-300)).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)][faces]


def hole_area(vertices: np.ndarray, faces: np.ndarray) -> float:
    """The area the surface's openings span: each loop of boundary edges (edges of one triangle only)
    spans its vector area |1/2 sum a x b|, oriented by its triangles (the area of its projection
    on its best plane, whatever the origin, since a loop closes)."""
    directed, keys = undirected_edges(faces)
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    boundary = directed[counts[inverse.reshape(-1)] == 1]
    if len(boundary) == 0:
        return 0.0
    loops = loose_parts(np.column_stack([boundary, boundary[:, 1]]), len(vertices))[boundary[:, 0]]
    vector_areas = np.zeros((loops.max() + 1, 3))
    np.add.at(vector_areas, loops, 0.5 * cross(vertices[boundary[:, 0]], vertices[boundary[:, 1]]))
    return float(np.linalg.norm(vector_areas, axis=1).sum())
