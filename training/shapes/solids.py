"""Procedural closed surfaces for the volumetric categories, deterministic from a numpy Generator.

Superquadrics span spheres, rounded boxes, cylinders and diamonds with two exponents; a smooth
random radial displacement makes every shape its own. They stay star-shaped about their centre,
which ``layered_tets`` needs.
"""

import numpy as np


def grid_surface(rings: int, segments: int):
    """Triangles of a (rings + 1) x segments latitude-longitude grid with poles collapsed: a closed
    sphere topology. Returns (u, v) parameters per vertex and the triangles."""
    theta = np.pi * np.arange(1, rings) / rings
    phi = 2 * np.pi * np.arange(segments) / segments
    u = np.concatenate([[0.0], np.repeat(theta, segments), [np.pi]])
    v = np.concatenate([[0.0], np.tile(phi, rings - 1), [0.0]])
    grid = 1 + np.arange((rings - 1) * segments).reshape(rings - 1, segments)
    right = np.roll(grid, -1, axis=1)
    top = np.stack([np.zeros(segments, int), grid[0], right[0]], -1)
    bottom = np.stack([np.full(segments, len(u) - 1), right[-1], grid[-1]], -1)
    middle = [np.stack([grid[:-1], grid[1:], right[1:]], -1).reshape(-1, 3),
              np.stack([grid[:-1], right[1:], right[:-1]], -1).reshape(-1, 3)]
    return u, v, np.concatenate([top, *middle, bottom])


def uv_sphere(rings=50, segments=52):
    """Closed UV sphere of radius 1: two poles and (rings - 1) x segments vertices (2550 by default)."""
    u, v, faces = grid_surface(rings, segments)
    return np.stack([np.sin(u) * np.cos(v), np.sin(u) * np.sin(v), np.cos(u)], 1), faces


def superquadric(rng, rings=24, segments=32):
    """x = a (s(cos u, e1), s(sin u, e1) s(cos v, e2), s(sin u, e1) s(sin v, e2)) with s(c, e) = sign(c)|c|^e,
    the pole along x; random semi-axes (0.1-0.4 m) and exponents (0.3-1.6), centred near the origin."""
    u, v, faces = grid_surface(rings, segments)
    e1, e2 = rng.uniform(0.3, 1.6, size=2)

    def s(c, e):
        return np.sign(c) * np.abs(c) ** e

    unit = np.stack([s(np.cos(u), e1), s(np.sin(u), e1) * s(np.cos(v), e2), s(np.sin(u), e1) * s(np.sin(v), e2)], 1)
    vertices = _displaced(rng, unit * rng.uniform(0.1, 0.4, size=3))
    return _oriented(vertices, faces)


def _displaced(rng, vertices, waves=4, amplitude=0.12):
    """Scale each vertex about the centre by 1 + a sum of a few random plane waves on its direction."""
    center = vertices.mean(0)
    direction = vertices - center
    norm = np.linalg.norm(direction, axis=1, keepdims=True)
    unit = direction / np.maximum(norm, 1e-12)
    k = rng.normal(size=(waves, 3)) * rng.uniform(1.0, 3.0, size=(waves, 1))
    phase = rng.uniform(0, 2 * np.pi, size=waves)
    bump = (np.cos(unit @ k.T + phase) * rng.uniform(-1, 1, size=waves)).sum(1) / waves
    return center + direction * (1 + amplitude * bump)[:, None]


def _oriented(vertices, faces):
    """Triangles turned to face outwards."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    volume = np.einsum("fi,fi->", a - vertices.mean(0), np.cross(b - a, c - a))
    return vertices, (faces if volume > 0 else faces[:, ::-1]).astype(np.int64)

