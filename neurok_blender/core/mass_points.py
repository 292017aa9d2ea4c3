"""Where a deformable body's mass sits: spread by area over the surface, and on a grid inside a solid.

The learned map moves any material point, so the mass can sit where the matter is: a solid's
interior points give it the inertia of a solid (a sphere turns with 2/5 m r^2, not a shell's 2/3),
and a sheet's mass lies on its surface. A solid gets surface points too, with SURFACE_SHARE of its
mass: the decoder moves the surface, and a latent direction that moved only a massless corner would
have a vanishing mass matrix and let a load there accelerate without bound. The share is small so
the inertia stays a solid's (a 1 x 0.5 x 0.25 box: within 12 % on every axis, where a shell is
30-60 % above).
Inside is decided by signed ray crossings (``mesh.lattice_inside``).

A body with mirror planes (``mirror.py``, G of |G| > 1 reflections) gets a mirror-symmetric set:
count / |G| samples and their images under every g in G, each with 1/|G| of its sample's mass, then
the moments matched (their solution is unique, so it is as symmetric as the points). Random samples
alone are lopsided: unequal masses at mirrored places put the pressure of a flat landing off centre,
and the body tilts and drifts.
"""

import numpy as np

from .mesh import (MassProperties, is_closed, lattice_inside, loose_parts, mass_properties, signed_volume,
                   tetrahedron_volumes)
from .mirror import MirrorGroup
from .surface import sample_surface

POINTS = 512  # surface samples, and about as many interior points; the engine's cost grows mildly with them
SURFACE_SHARE = 0.1  # of a solid's mass, on its surface samples
MIN_INSIDE = 1 / 8  # of the asked grid points: fewer inside (a thin solid) and the surface carries the mass
MIN_PART_POINTS = 16  # samples of the smallest part, so even a light part has its inertia where it is
MAX_SAMPLED_PARTS = 64  # more loose parts than this are sampled as one solid (the points would pile up)
MOMENT_ITERATIONS = 30
MOMENT_TOLERANCE = 1e-6  # of the mass, on the moment equations scaled by the points' spread


def material_points(vertices: np.ndarray, faces: np.ndarray, mass: float, count: int = POINTS,
                    seed: int = 0, mirrors: MirrorGroup | None = None) -> tuple[np.ndarray, np.ndarray, str, np.ndarray | None]:
    """(points (P, 3), masses (P,) summing to ``mass``, "volume" or "surface", the loose part each
    point was sampled in (P,), or None when the parts were not sampled one by one: a sheet, or more
    than MAX_SAMPLED_PARTS pieces), deterministic: the
    samples of ``sampled_points`` reweighted to the mesh's exact mass, centre and inertia
    (``mesh.mass_properties``), the ones the rigid solver uses, so a body tumbles and bounces as the
    same body solved as rigid (random samples alone put a sheet's centre and a solid's inertia off). With ``mirrors`` (the mesh's ``mirror.MirrorGroup``) of more than the identity the
    points are ``symmetric_points``: g(x_i) is a point of the same mass as x_i for every g in G."""
    labels = loose_parts(faces, len(vertices))
    if mirrors is not None and mirrors.size > 1:
        points, masses, where, groups = symmetric_points(vertices, faces, mass, mirrors, labels, count, seed)
    else:
        points, masses, where, groups = sampled_points(vertices, faces, mass, labels, count, seed)
    return (points, match_moments(points, masses, mass_properties(vertices, faces, mass), groups), where,
            groups if _by_part(labels, where) else None)


def _by_part(labels: np.ndarray, where: str) -> bool:
    """Whether ``sampled_points`` sampled each loose part on its own (``labels``: each vertex's part):
    a solid of at most MAX_SAMPLED_PARTS pieces."""
    return where == "volume" and labels.max() < MAX_SAMPLED_PARTS


def symmetric_points(vertices: np.ndarray, faces: np.ndarray, mass: float, mirrors: MirrorGroup,
                     labels: np.ndarray, count: int = POINTS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str, np.ndarray]:
    """``sampled_points`` of count / |G| samples and their images g(x) under every g in ``mirrors``,
    each image with 1 / |G| of its sample's mass: a set G maps onto itself, masses included. A point's
    part is the mirror image of its sample's (a loose part's image is a loose part of the same volume),
    so every part keeps its share of the mass. (A grid point of a part symmetric in itself falls on
    another grid point's image: the pair carries its mass together.)"""
    size = mirrors.size
    points, masses, where, groups = sampled_points(vertices, faces, mass, labels, max(count // size, MIN_PART_POINTS), seed)
    if _by_part(labels, where):  # groups are loose parts: map them to their images
        first = np.unique(labels, return_index=True)[1]  # a vertex of each part, in the parts' order
        part_images = labels[mirrors.vertex_images(vertices, first)]  # (|G|, parts): the part each image is
        mirrored = [part_images[i][groups] for i in range(size)]
    else:  # one group (a sheet, or many pieces sampled as one solid)
        mirrored = [groups] * size
    return (np.concatenate(list(mirrors.images(points))), np.concatenate([masses / size] * size), where,
            np.concatenate(mirrored))


def sampled_points(vertices: np.ndarray, faces: np.ndarray, mass: float, labels: np.ndarray,
                   count: int = POINTS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str, np.ndarray]:
    """(points (P, 3), masses (P,) summing to ``mass``, "volume" or "surface", the part each point
    was sampled for (P,)), deterministic: ``count`` area-uniform surface samples, and about ``count``
    interior grid points in a solid; ``labels``: each vertex's loose part (``mesh.loose_parts``).

    A solid of several loose parts (an articulated object) gives each part the share of the mass its
    volume has, as the reference simulators do, and samples each part on its own: one grid over all
    of them would hit a thin part by chance.
    """
    rng = np.random.default_rng(seed)
    parts = labels[faces[:, 0]]  # part of each triangle
    if parts.max() >= MAX_SAMPLED_PARTS:  # many pieces (gravel, leaves): sampled as one solid
        parts = np.zeros_like(parts)
    volumes = np.abs(np.bincount(parts, weights=tetrahedron_volumes(vertices, faces)))
    if not is_closed(faces) or volumes.sum() <= 0:
        surface = sample_surface(vertices, faces, count, rng).points
        return surface, np.full(len(surface), mass / len(surface)), "surface", np.zeros(len(surface), int)
    points, masses, groups = [], [], []
    for part in np.flatnonzero(volumes > 0):
        share = volumes[part] / volumes.sum()
        asked = max(MIN_PART_POINTS, round(count * share))
        surface = sample_surface(vertices, faces, asked, rng, triangle_mask=parts == part).points
        grid = _interior_grid(*_submesh(vertices, faces[parts == part]), asked)
        if grid is None:
            points.append(surface)
            masses.append(np.full(len(surface), mass * share / len(surface)))
        else:
            points += [grid, surface]
            masses += [np.full(len(grid), mass * share * (1 - SURFACE_SHARE) / len(grid)),
                       np.full(len(surface), mass * share * SURFACE_SHARE / len(surface))]
        groups.append(np.full(len(surface) + (0 if grid is None else len(grid)), part))
    return np.concatenate(points), np.concatenate(masses), "volume", np.concatenate(groups)


def match_moments(points: np.ndarray, masses: np.ndarray, target: MassProperties, groups: np.ndarray) -> np.ndarray:
    """Masses m_i = w_i exp(a_i . lambda) with the target's centre and second moment exactly and each
    group (part) keeping its mass: a_i = (group indicators, r_i, r_i r_i^T) with r_i the offset from
    the target centre (in units of the points' spread). The least change in the relative-entropy
    sense, and every mass stays positive. Newton's method on the moment equations from lambda = 0
    (the samples are close already); the unchanged masses if it does not converge (points that
    cannot carry the moments)."""
    r = points - target.center
    size = np.sqrt((masses[:, None] * r * r).sum() / masses.sum()) or 1.0
    r = r / size
    upper = np.triu_indices(3)
    groups = np.unique(groups, return_inverse=True)[1]
    features = np.column_stack([np.eye(groups.max() + 1)[groups], r, (r[:, :, None] * r[:, None, :])[:, upper[0], upper[1]]])
    goal = np.concatenate([np.bincount(groups, weights=masses), np.zeros(3), (target.second_moment / size**2)[upper]])
    tilt = np.zeros(features.shape[1])
    for _ in range(MOMENT_ITERATIONS):
        weights = masses * np.exp(np.clip(features @ tilt, -50.0, 50.0))
        residual = features.T @ weights - goal
        if np.abs(residual).max() <= MOMENT_TOLERANCE * target.mass:
            return weights
        jacobian = (features * weights[:, None]).T @ features
        tilt -= np.linalg.lstsq(jacobian, residual, rcond=1e-12)[0]
    return masses


def _submesh(vertices, faces):
    """The vertices ``faces`` use, and the faces renumbered to them."""
    used = np.unique(faces)
    return vertices[used], np.searchsorted(used, faces)


def _interior_grid(vertices, faces, count):
    """About ``count`` points of a regular grid inside the solid, or None when it is too thin."""
    low, high = vertices.min(0), vertices.max(0)
    extent = np.maximum(high - low, 1e-9 * np.ptp(vertices).max())
    volume = abs(signed_volume(vertices, faces))
    spacing = (volume / count) ** (1 / 3)
    cells = np.maximum(np.round(extent / max(spacing, 1e-12)).astype(int), 1)
    inside = lattice_inside(vertices, faces, *(low[k] + (np.arange(cells[k]) + 0.5) * extent[k] / cells[k] for k in range(3)))
    return inside if len(inside) >= MIN_INSIDE * count else None
