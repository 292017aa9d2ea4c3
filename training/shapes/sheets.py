"""Procedural cloth: flat sheets of many outlines with holes, and open shells, from a numpy Generator.

Sheets are cut from a triangular lattice (equilateral triangles, so every edge starts at the same
rest length) by an outline and its holes: a triangle is kept when its centroid lies inside, which
leaves a slightly ragged edge, as scissors would. Shells are parametric surfaces left open: a cap
of a sphere, a tube, a lampshade cone and a wavy height field.
"""

import numpy as np

from neurok_blender.core.mesh import loose_parts

SPACING = (0.045, 0.08)  # lattice spacing over the sheet's half-size: about 300-1500 vertices


def lattice_sheet(inside, half_extent: float, spacing: float):
    """The triangles of a triangular lattice over [-h, h]^2 whose centroids satisfy ``inside((N, 2))``,
    as a single connected sheet at z = 0 (the largest piece, if the cut leaves islands)."""
    rows = int(np.ceil(2 * half_extent / (spacing * np.sqrt(3) / 2))) + 1
    cols = int(np.ceil(2 * half_extent / spacing)) + 2
    j, i = np.meshgrid(np.arange(cols), np.arange(rows))
    x = -half_extent + spacing * (j + 0.5 * (i % 2))
    y = -half_extent + spacing * np.sqrt(3) / 2 * i
    points = np.stack([x.ravel(), y.ravel()], 1)
    index = np.arange(rows * cols).reshape(rows, cols)
    triangles = []
    for r in range(rows - 1):
        a, b = index[r, :-1], index[r, 1:]
        c, d = index[r + 1, :-1], index[r + 1, 1:]
        if r % 2 == 0:  # the row above is shifted right by half a spacing
            triangles += [np.stack([a, b, c], 1), np.stack([b, d, c], 1)]
        else:
            triangles += [np.stack([a, b, d], 1), np.stack([a, d, c], 1)]
    triangles = np.concatenate(triangles)
    triangles = triangles[inside(points[triangles].mean(1))]
    if len(triangles) == 0:
        raise ValueError("the outline keeps no triangle of the lattice")
    used, faces = np.unique(triangles, return_inverse=True)
    faces = faces.reshape(-1, 3)
    parts = loose_parts(faces, len(used))
    biggest = np.bincount(parts[faces[:, 0]]).argmax()
    faces = faces[parts[faces[:, 0]] == biggest]
    used2, faces = np.unique(faces, return_inverse=True)
    vertices = np.column_stack([points[used][used2], np.zeros(len(used2))])
    return vertices, faces.reshape(-1, 3).astype(np.int64)


def random_sheet(rng):
    """A flat sheet: rectangle, ellipse or star-like outline (0.4-1.2 m across), with up to two holes."""
    size = rng.uniform(0.2, 0.6)
    kind = rng.choice(["rectangle", "ellipse", "blob"])
    aspect = rng.uniform(0.4, 1.0)
    waves = rng.normal(0, 0.12, size=4)
    phases = rng.uniform(0, 2 * np.pi, size=4)

    def outline(p):
        x, y = p[:, 0] / size, p[:, 1] / (size * aspect)
        if kind == "rectangle":
            return (np.abs(x) < 1) & (np.abs(y) < 1)
        if kind == "ellipse":
            return x**2 + y**2 < 1
        angle = np.arctan2(y, x)
        radius = 1 + sum(w * np.cos((k + 2) * angle + ph) for k, (w, ph) in enumerate(zip(waves, phases)))
        return np.hypot(x, y) < radius

    holes = [(rng.uniform(-0.5, 0.5, size=2) * [size, size * aspect], rng.uniform(0.08, 0.25) * size * aspect)
             for _ in range(int(rng.integers(0, 3)))]

    def inside(p):
        keep = outline(p)
        for center, radius in holes:
            keep &= np.linalg.norm(p - center, axis=1) > radius
        return keep

    return lattice_sheet(inside, size * 1.4, rng.uniform(*SPACING) * size)


def random_shell(rng):
    """An open shell: a spherical cap, a tube, a cone frustum or a wavy height field, 0.3-1 m across."""
    kind = rng.choice(["cap", "tube", "cone", "wave"])
    size = rng.uniform(0.15, 0.5)
    n_u, n_v = int(rng.integers(12, 22)), int(rng.integers(24, 40))
    u, v = np.meshgrid(np.linspace(0, 1, n_u), np.arange(n_v) / n_v, indexing="ij")
    closed_v = kind != "wave"
    if kind == "cap":  # polar angle up to 40-120 degrees, pole row kept apart (small hole at the top)
        theta = np.radians(rng.uniform(5, 10)) + u * np.radians(rng.uniform(40, 120))
        phi = 2 * np.pi * v
        points = size * np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], -1)
    elif kind in ("tube", "cone"):
        top = 1.0 if kind == "tube" else rng.uniform(0.3, 0.7)
        radius = size * (1 + (top - 1) * u) * rng.uniform(0.5, 1.0)
        phi = 2 * np.pi * v
        points = np.stack([radius * np.cos(phi), radius * np.sin(phi), size * rng.uniform(0.8, 2.0) * u], -1)
    else:
        v = v * n_v / (n_v - 1)
        k = rng.normal(0, 3.0, size=(3, 2))
        x, y = size * (2 * u - 1), size * (2 * v - 1)
        z = size * 0.15 * sum(np.cos(k[i, 0] * x / size + k[i, 1] * y / size + i) for i in range(3))
        points = np.stack([x, y, z], -1)
    index = np.arange(n_u * n_v).reshape(n_u, n_v)
    right = np.roll(index, -1, axis=1) if closed_v else index[:, 1:]
    left = index if closed_v else index[:, :-1]
    faces = np.concatenate([np.stack([left[:-1], left[1:], right[1:]], -1).reshape(-1, 3),
                            np.stack([left[:-1], right[1:], right[:-1]], -1).reshape(-1, 3)])
    return points.reshape(-1, 3), faces.astype(np.int64)


def random_cloth(rng):
    """Two thirds flat sheets, one third open shells."""
    return random_sheet(rng) if rng.random() < 2 / 3 else random_shell(rng)
