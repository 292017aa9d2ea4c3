"""Where a deformable body's mass sits: spread by area over the surface, and on a grid inside a solid.

The learned map moves any material point, so the mass can sit where the matter is: a solid's
interior points give it the inertia of a solid (a sphere turns with 2/5 m r^2, not a shell's 2/3),
and a sheet's mass lies on its surface. A solid gets surface points too, with SURFACE_SHARE of its
mass: the decoder moves the surface, and a latent direction that moved only a massless corner would
have a vanishing mass matrix and let a load there accelerate without bound. The share is small so
the inertia stays a solid's (a 1 x 0.5 x 0.25 box: within 12 % on every axis, where a shell is
30-60 % above).
Inside is decided by signed ray crossings (``mesh.lattice_inside``).
"""

import numpy as np

from .mesh import is_closed, lattice_inside, signed_volume
from .surface import sample_surface

POINTS = 512  # surface samples, and about as many interior points; the engine's cost grows mildly with them
SURFACE_SHARE = 0.1  # of a solid's mass, on its surface samples
MIN_INSIDE = 64  # fewer grid points than this inside (a thin solid): use the surface


def material_points(vertices: np.ndarray, faces: np.ndarray, mass: float, count: int = POINTS,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """(points (P, 3), masses (P,) summing to ``mass``, "volume" or "surface"), deterministic:
    ``count`` area-uniform surface samples, and about ``count`` interior grid points in a solid."""
    surface = sample_surface(vertices, faces, count, np.random.default_rng(seed)).points
    if is_closed(faces):
        grid = _interior_grid(vertices, faces, count)
        if grid is not None:
            share = np.concatenate([np.full(len(grid), (1 - SURFACE_SHARE) / len(grid)),
                                    np.full(len(surface), SURFACE_SHARE / len(surface))])
            return np.concatenate([grid, surface]), mass * share, "volume"
    return surface, np.full(len(surface), mass / len(surface)), "surface"


def _interior_grid(vertices, faces, count):
    """About ``count`` points of a regular grid inside the solid, or None when it is too thin."""
    low, high = vertices.min(0), vertices.max(0)
    extent = np.maximum(high - low, 1e-9 * np.ptp(vertices).max())
    volume = abs(signed_volume(vertices, faces))
    spacing = (volume / count) ** (1 / 3)
    cells = np.maximum(np.round(extent / max(spacing, 1e-12)).astype(int), 1)
    inside = lattice_inside(vertices, faces, *(low[k] + (np.arange(cells[k]) + 0.5) * extent[k] / cells[k] for k in range(3)))
    return inside if len(inside) >= MIN_INSIDE else None
