"""Where a deformable body's mass sits: a solid's inertia is a solid's, a shell's mass is on its surface."""

import numpy as np

from neurok_blender.core.mass_points import material_points
from neurok_blender.core.mesh import box_mesh, mass_properties, winding_number


def test_a_solid_box_turns_like_a_solid_and_a_holed_one_is_a_shell():
    size = np.array([1.0, 0.5, 0.25])
    v, f = box_mesh(tuple(size), corner=(2.0, 0.0, 1.0))
    points, masses, where, _ = material_points(v, f, mass=3.0)
    assert where == "volume" and np.isclose(masses.sum(), 3.0) and (masses > 0).all()
    center = (masses[:, None] * points).sum(0) / 3.0
    np.testing.assert_allclose(center, v.mean(0), atol=1e-9)
    second = np.einsum("p,pi,pj->ij", masses, points - center, points - center)
    solid = 3.0 * size**2 / 12  # S_ii = m a_i^2 / 12; a shell of the same box would be 30-60 % above it
    np.testing.assert_allclose(np.diag(second), solid, rtol=1e-6)  # reweighted to the exact moments
    assert np.abs(second - np.diag(np.diag(second))).max() < 1e-6 * solid.max()
    assert (np.abs(winding_number(points[masses == masses.max()], v, f)) > 0.99).all()  # the grid is inside

    open_points, open_masses, open_where, _ = material_points(v, f[:-2], mass=3.0)
    assert open_where == "surface" and np.isclose(open_masses.sum(), 3.0)


def test_loose_parts_get_the_mass_of_their_volume():
    """A block and a thin plate beside it (an articulated object's parts): one grid over both would
    sample the 4 mm plate by chance; each part gets its volume's share of the mass, exactly."""
    block, plate = box_mesh((0.2, 0.2, 0.2)), box_mesh((0.3, 0.1, 0.004), corner=(0.25, 0.0, 0.05))
    v, f = np.concatenate([block[0], plate[0]]), np.concatenate([block[1], plate[1] + len(block[0])])
    points, masses, where, _ = material_points(v, f, mass=2.0)
    on_plate = points[:, 0] > 0.225
    share = 0.3 * 0.1 * 0.004 / (0.3 * 0.1 * 0.004 + 0.2**3)
    assert where == "volume" and np.isclose(masses.sum(), 2.0)
    np.testing.assert_allclose(masses[on_plate].sum(), 2.0 * share, rtol=1e-6)
    assert on_plate.sum() >= 16  # a light part still has points of its own


def test_many_loose_pieces_are_sampled_as_one_solid():
    """100 pebbles: per-part samples would pile up 1600 surface points at least; as one solid the
    count stays about twice the asked one, and the mass is all there."""
    pebbles = [box_mesh((0.05, 0.05, 0.05), corner=(0.1 * (k % 10), 0.1 * (k // 10), 0.0)) for k in range(100)]
    v = np.concatenate([p[0] for p in pebbles])
    f = np.concatenate([p[1] + 8 * k for k, p in enumerate(pebbles)])
    points, masses, where, _ = material_points(v, f, mass=1.0, count=256)
    assert where == "volume" and np.isclose(masses.sum(), 1.0) and len(points) <= 3 * 256


def test_a_sheet_gets_its_exact_centre_and_inertia():
    """512 random samples of a bent sheet put its centre 6 mm (0.5 % of its size) off; reweighted, the
    points carry the shell's exact moments (``mesh.mass_properties``), as the rigid solver's do."""
    u, w = np.meshgrid(np.linspace(0, 1, 20), np.linspace(0, 0.6, 12), indexing="ij")
    v = np.column_stack([u.ravel(), w.ravel(), 0.2 * np.sin(3 * u.ravel()) * w.ravel()])
    cells = np.arange(19 * 12).reshape(19, 12)[:, :11].ravel()
    f = np.concatenate([np.column_stack([cells, cells + 12, cells + 1]), np.column_stack([cells + 1, cells + 12, cells + 13])])
    points, masses, where, _ = material_points(v, f, mass=0.4)
    exact = mass_properties(v, f, 0.4)
    center = (masses[:, None] * points).sum(0) / 0.4
    second = np.einsum("p,pi,pj->ij", masses, points - center, points - center)
    assert where == "surface" and (masses > 0).all()
    np.testing.assert_allclose(center, exact.center, atol=1e-6 * 1.2)
    np.testing.assert_allclose(second, exact.second_moment, atol=1e-6 * np.abs(exact.second_moment).max())
