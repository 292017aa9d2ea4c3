import numpy as np
import pytest

from neurok_blender.core.mesh import check_mesh, contact_samples, is_closed, mass_properties, principal_points
from shapes import box


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
