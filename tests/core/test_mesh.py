import warnings

import numpy as np
import pytest

from neurok_blender.core import mesh
from neurok_blender.core.mesh import (check_mesh, contact_samples, convex_hull, edge_samples, face_samples,
                                      fibonacci_sphere, is_closed, lattice_inside, mass_properties, principal_points,
                                      round_hull, subdivided, support_samples, winding_number)
from neurok_blender.core.simulation import contact_points, touching_points
from shapes import box
from training.shapes.solids import uv_sphere


def test_box_mass_properties_are_exact():
    v, f = box((1.0, 2.0, 3.0), (5.0, -1.0, 2.0))
    props = mass_properties(v, f, 6.0)
    assert props.solid
    np.testing.assert_allclose(props.center, [5.5, 0.0, 3.5], atol=1e-12)
    expected = 6.0 / 12 * np.diag([2**2 + 3**2, 1 + 3**2, 1 + 2**2])
    np.testing.assert_allclose(props.inertia, expected, atol=1e-12)


def test_inverted_normals_give_the_same_solid():
    v, f = box((1.0, 2.0, 3.0))
    a, b = mass_properties(v, f, 2.0), mass_properties(v, f[:, ::-1], 2.0)
    np.testing.assert_allclose(a.inertia, b.inertia, atol=1e-12)
    np.testing.assert_allclose(a.center, b.center, atol=1e-12)


def test_open_sheet_uses_area():
    v = np.array([[0, 0, 0], [2, 0, 0], [2, 1, 0], [0, 1, 0]], dtype=np.float64)
    f = np.array([[0, 1, 2], [0, 2, 3]])
    props = mass_properties(v, f, 3.0)
    assert not props.solid and not is_closed(f)
    np.testing.assert_allclose(props.inertia, 3.0 / 12 * np.diag([1.0, 4.0, 5.0]), atol=1e-12)


def test_principal_points_reproduce_mass_center_and_inertia():
    v, f = box((1.0, 2.0, 3.0), (0.3, 0.2, 0.1))
    v = v @ np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0].T
    props = mass_properties(v, f, 4.0)
    points, masses = principal_points(props)
    r = points - props.center
    assert np.isclose(masses.sum(), 4.0)
    np.testing.assert_allclose((masses[:, None] * points).sum(0) / 4.0, props.center, atol=1e-12)
    np.testing.assert_allclose(np.einsum("p,pi,pj->ij", masses, r, r), props.second_moment, atol=1e-12)


def test_contact_samples_contain_hull_corners_and_respect_the_budget():
    v, f = box()
    assert sorted(contact_samples(v)) == list(range(8))
    rng = np.random.default_rng(1)
    cloud = rng.normal(size=(5000, 3))
    picked = contact_samples(cloud, count=64)
    assert len(picked) == 64 == len(set(picked.tolist()))
    for d in ([0, 0, -1], [1, 0, 0], [0, 1, 0]):
        assert np.argmax(cloud @ d) in picked


def test_the_support_samples_hull_is_the_surfaces_where_the_contact_samples_sag():
    """A ball of 0.3 m radius: the support samples' hull reaches within 1.5 mm of the surface in every
    direction, the 128 contact samples' falls 10 mm and more short in some; a box's are its corners;
    a mesh past the candidates' budget is read through a subset, as closely."""
    v, _ = uv_sphere(22, 45)
    v = 0.3 * v
    directions = fibonacci_sphere(5000)
    support = (directions @ v.T).max(1)
    gap = lambda picked: support - (directions @ v[picked].T).max(1)
    assert gap(support_samples(v)).max() < 1.5e-3
    assert gap(contact_points(v)).max() > 1e-2
    assert sorted(support_samples(box()[0])) == list(range(8))
    v, _ = uv_sphere(60, 120)  # 7k vertices read through 3k
    v = 0.3 * v
    support = (directions @ v.T).max(1)
    assert gap(support_samples(v, candidates=3000)).max() < 4e-3


def test_the_convex_hull_weighs_each_vertex_by_its_share_of_the_directions():
    """Qhull's hull: a box's corners, each the furthest along an eighth of the directions; a ball's
    vertices, their shares summing to 1, as many as the directions it is the furthest along of 20k
    well-spread ones, within a fifth; a flat mesh has none."""
    corners = convex_hull(box()[0])
    assert corners.indices.tolist() == list(range(8)) and np.allclose(corners.shares, 1 / 8)
    v, _ = uv_sphere(22, 45)
    hull = convex_hull(v)
    assert abs(hull.shares.sum() - 1) < 1e-9
    directions = fibonacci_sphere(20000)
    counted = np.bincount((directions @ v[hull.indices].T).argmax(1), minlength=len(hull.indices)) / len(directions)
    assert np.abs(counted - hull.shares).max() < 0.2 * hull.shares.max()
    with pytest.raises(ValueError):
        convex_hull(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]))


def test_a_ball_or_egg_is_round_a_box_can_cigar_or_low_poly_ball_is_not():
    """Round (it rolls on its support point): its contact samples miss its hull and no side of it is
    flat. Not round: a box or a low-poly ball, whose hull points are all samples; a can (its ends), a
    box rounded halfway to a ball and an egg three times as long as wide (their flat sides)."""
    def rounded(v):
        return round_hull(v, v[support_samples(v)], v[contact_points(v)]) is not None

    ball, _ = uv_sphere(22, 45)
    assert rounded(0.3 * ball) and rounded(ball * [0.6, 0.3, 0.3])
    turn = np.linspace(0, 2 * np.pi, 128, endpoint=False)
    ring = np.stack([0.15 * np.cos(turn), 0.15 * np.sin(turn), np.zeros(128)], 1)
    cube, faces = box((0.3, 0.3, 0.3), (-0.15, -0.15, -0.15))
    for _ in range(3):
        cube, faces = subdivided(cube, faces)
    half_round = 0.5 * cube + 0.5 * 0.2 * cube / np.linalg.norm(cube, axis=1, keepdims=True)
    for shape in (box()[0], cube, 0.3 * uv_sphere(6, 10)[0], np.concatenate([ring, ring + [0, 0, 0.3]]),
                  half_round, ball * [0.9, 0.3, 0.3]):
        assert not rounded(shape)


def test_a_hull_point_of_no_share_leaves_the_roundness_as_it_was_without_a_warning(monkeypatch):
    """A nearly flat side of a crumpled sheet's hull can give its points no share (angle sums that
    round to 2 pi): they weigh nothing in the support's smoothing, without NumPy's log(0) warning."""
    ball = 0.3 * uv_sphere(22, 45)[0]
    support, samples = ball[support_samples(ball)], ball[contact_points(ball)]
    hull = mesh.convex_hull(ball)
    shares = hull.shares.copy()
    shares[:3] = 0.0
    monkeypatch.setattr(mesh, "convex_hull", lambda v: mesh.Hull(hull.indices, shares / shares.sum(), hull.normals))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert round_hull(ball, support, samples) is not None


@pytest.mark.parametrize(
    "vertices, faces, message",
    [
        (np.zeros((0, 3)), np.zeros((0, 3), int), "non-empty"),
        (np.array([[0, 0, np.nan], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]), "non-finite"),
        (np.eye(3), np.zeros((0, 3), int), "no faces"),
        (np.eye(3), np.array([[0, 1, 5]]), "face indices"),
        (np.zeros((3, 3)), np.array([[0, 1, 2]]), "no area"),
    ],
)
def test_bad_meshes_are_refused_with_a_reason(vertices, faces, message):
    with pytest.raises(ValueError, match=message):
        check_mesh(vertices, faces)


def test_mass_must_be_positive():
    v, f = box()
    with pytest.raises(ValueError, match="mass"):
        mass_properties(v, f, -1.0)


def _lattice(low, high, spacing):
    return [np.arange(low[d] + spacing / 2, high[d], spacing) for d in range(3)]


@pytest.mark.parametrize("flip", [False, True])
def test_lattice_inside_agrees_with_the_winding_number(flip):
    # two tilted boxes, one above the other: a column enters and leaves twice
    turn = np.array([[0.8, -0.6, 0.0], [0.36, 0.48, -0.8], [0.48, 0.64, 0.6]])
    (v1, f1), (v2, f2) = box((0.4, 0.3, 0.2), (-0.2, -0.15, 0.0)), box((0.3, 0.3, 0.3), (-0.1, -0.2, 0.4))
    v, f = np.concatenate([v1, v2]) @ turn.T, np.concatenate([f1, f2 + len(v1)])
    f = f[:, ::-1] if flip else f  # either orientation is a solid
    axes = _lattice(v.min(0), v.max(0), 0.02)
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    expected = grid[np.abs(winding_number(grid, v, f)) >= 0.5]
    np.testing.assert_array_equal(lattice_inside(v, f, *axes), expected)
    assert abs(len(expected) * 0.02**3 / (0.4 * 0.3 * 0.2 + 0.3**3) - 1) < 0.05  # the boxes' volume


def test_rays_through_vertices_and_edges_count_once():
    spacing = 0.1
    xs, ys, zs = _lattice((-0.3, -0.3, -0.3), (0.3, 0.3, 0.3), spacing)
    apex = np.array([xs[3], ys[3]])  # exactly on the ray of column (3, 3)
    # an octahedron whose top and bottom vertices sit on that ray (four triangles meet at each), and
    # whose edges from them lie over the lattice lines x = xs[3] and y = ys[3]
    v = np.array([[*apex, 0.27], [*apex, -0.27], [0.3, apex[1], 0.01], [apex[0], 0.3, 0.01], [-0.3, apex[1], 0.01],
                  [apex[0], -0.3, 0.01]])
    f = np.array([[0, 2, 3], [0, 3, 4], [0, 4, 5], [0, 5, 2], [1, 3, 2], [1, 4, 3], [1, 5, 4], [1, 2, 5]])
    grid = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), -1).reshape(-1, 3)
    expected = grid[np.abs(winding_number(grid, v, f)) >= 0.5]
    inside = lattice_inside(v, f, xs, ys, zs)
    np.testing.assert_array_equal(inside, expected)
    assert (inside[:, :2] == apex).all(1).sum() == 6  # the column through both apices: z = -0.25 ... 0.25


def test_edge_samples_spread_evenly_along_a_box_s_edges_alone_and_keep_its_symmetry():
    """Points along the twelve edges of a box, none on its faces' diagonals, equally spaced along each
    edge, within the budget, and as symmetric as the box: their mean is its centre."""
    v, f = box((0.3, 0.3, 0.3))
    points = edge_samples(v, f, 56)
    assert 0 < len(points) <= 56
    on_edges = (np.isclose(points, 0.0) | np.isclose(points, 0.3)).sum(1) >= 2  # two coordinates at a side
    assert on_edges.all()
    np.testing.assert_allclose(points.mean(0), v.mean(0), atol=1e-12)
    along_x = np.sort(points[np.isclose(points[:, 1], 0.0) & np.isclose(points[:, 2], 0.0), 0])
    np.testing.assert_allclose(np.diff(np.concatenate([[0.0], along_x, [0.3]])), 0.3 / (len(along_x) + 1))
    assert len(edge_samples(v, f, 0)) == 0


@pytest.mark.parametrize("size", [(0.3, 0.3, 0.3), (1.0, 0.1, 0.1)])
def test_face_samples_spread_over_a_box_s_faces_evenly_within_the_budget_and_centred(size):
    """Points on the surface of an 8-vertex box, inside its faces as well as along its edges, none at
    its vertices, within the budget, about one spacing apart everywhere (each point's nearest neighbour, a vertex included, within a factor 2 of
    the others'), and on every side centred on it, as its corners are."""
    v, f = box(size)
    points = face_samples(v, f, 120)
    assert 60 < len(points) <= 120
    lower, upper = v.min(0), v.max(0)
    on_a_side = (np.isclose(points, lower) | np.isclose(points, upper)).any(1)
    assert on_a_side.all() and ((points >= lower - 1e-12) & (points <= upper + 1e-12)).all()
    inside_a_face = (np.isclose(points, lower) | np.isclose(points, upper)).sum(1) == 1  # on one side, off its edges
    assert inside_a_face.sum() >= len(points) / 4
    assert np.linalg.norm(points[:, None] - v[None], axis=-1).min() > 1e-9
    everything = np.concatenate([points, v])
    gaps = np.linalg.norm(points[:, None] - everything[None], axis=-1)
    gaps[np.arange(len(points)), np.arange(len(points))] = np.inf
    nearest = gaps.min(1)
    assert nearest.max() < 2.0 * nearest.min()
    for axis in range(3):
        for end in (lower, upper):
            side = points[np.isclose(points[:, axis], end[axis])]
            np.testing.assert_allclose(side.mean(0), np.where(np.arange(3) == axis, end, v.mean(0)), atol=1e-12)
    assert len(face_samples(v, f, 0)) == 0


def test_a_learned_low_poly_body_touches_with_points_over_its_faces():
    """An 8-vertex box as a jelly touches with points spread over its faces (``count`` in all at most)
    wherever it is, its springs stiffened as for the points along its edges; a mesh of many vertices
    keeps its vertices."""
    v, f = box((0.3, 0.3, 0.3))
    points, share = touching_points(v, f, "faces")
    assert 64 < len(points) <= 128
    on_a_side = np.isclose(points[:, 2], 0.0).sum()
    assert share == pytest.approx((on_a_side / len(points)) / (4 / 8))
    fine = subdivided(*subdivided(*subdivided(v, f)))
    np.testing.assert_array_equal(touching_points(*fine, "faces")[0], fine[0][contact_points(fine[0])])


def test_a_low_poly_rigid_body_touches_other_meshes_along_its_edges_with_a_flat_side_pressing_as_its_corners_did():
    """Where it can meet meshes, an 8-vertex box touches with points along its edges besides its
    corners; its springs are stiffened by the share of them on one side over its corners' 4 of 8,
    so that a side presses as its corners did. On the ground alone, and for a mesh of many
    vertices, the contact points are as they were."""
    v, f = box((0.3, 0.3, 0.3))
    alone, share = touching_points(v, f, None)
    assert len(alone) == 8 and share == 1.0
    points, share = touching_points(v, f, "edges")
    assert 8 < len(points) <= 64
    on_a_side = np.isclose(points[:, 2], 0.0).sum()
    assert share == pytest.approx((on_a_side / len(points)) / (4 / 8))
    fine = subdivided(*subdivided(*subdivided(v, f)))
    np.testing.assert_array_equal(touching_points(*fine, "edges")[0], fine[0][contact_points(fine[0])])
