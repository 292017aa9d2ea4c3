"""An articulated body's potential: shape matching per part, joints where parts touch (articulation.py)."""

import numpy as np
import torch

from neurok_blender.core.articulation import find_joints, match_parts, matching_hessian
from neurok_blender.core.mesh import box_mesh, loose_parts
from neurok_blender.core.rotation import exp_so3

from shapes import hinged_boxes


def two_parts(count=30, seed=0):
    generator = torch.Generator().manual_seed(seed)
    rest = torch.randn(1, count, 3, generator=generator, dtype=torch.float64)
    masses = torch.rand(1, count, generator=generator, dtype=torch.float64) + 0.5
    parts = torch.arange(count) % 2
    return rest, masses, parts


def test_a_part_moved_rigidly_by_any_angle_costs_nothing_and_one_stretched_costs_its_stretch():
    rest, masses, parts = two_parts()
    turned = rest.clone()
    for part, (axis, shift) in enumerate([([0.3, -1.2, 0.4], [1.0, 2.0, -3.0]), ([2.5, 0.1, 0.0], [0.0, -0.5, 0.2])]):
        rotation = exp_so3(torch.tensor([axis], dtype=torch.float64))[0]
        at = parts == part
        turned[0, at] = rest[0, at] @ rotation.T + torch.tensor(shift, dtype=torch.float64)
    matched = match_parts(turned, rest, masses, parts, 2)
    assert float(matched.energy) < 1e-24
    # stretched by 10 % about each part's centre: the best motion is none, the cost sum m |0.1 a|^2
    stretched, expected = rest.clone(), 0.0
    for part in range(2):
        at = parts == part
        m = masses[0, at]
        centre = (m[:, None] * rest[0, at]).sum(0) / m.sum()
        stretched[0, at] = centre + 1.1 * (rest[0, at] - centre)
        expected += float((m[:, None] * (0.1 * (rest[0, at] - centre)) ** 2).sum())
    np.testing.assert_allclose(float(match_parts(stretched, rest, masses, parts, 2).energy), expected, rtol=1e-12)


def test_a_non_finite_point_gives_a_non_finite_cost_for_the_rollout_to_catch_not_an_error():
    """A diverging step can leave a NaN among the points; the frame is then redone with more steps,
    which needs the cost to say so (NaN), not the SVD to raise."""
    rest, masses, parts = two_parts()
    broken = rest.clone()
    broken[0, 0] = float("nan")  # in part 0
    matched = match_parts(broken, rest, masses, parts, 2)
    assert not torch.isfinite(matched.energy).any()
    assert torch.isfinite(matched.residual[0, parts == 1]).all()  # the other part is matched as ever
    np.testing.assert_allclose(matched.residual[0, parts == 1], match_parts(rest, rest, masses, parts, 2).residual[0, parts == 1],
                               atol=1e-12)


def test_the_gradient_is_the_residual_and_the_hessian_the_energy_s_own():
    """dE/2/dy = m u (envelope theorem) and matching_hessian with J = 1 is d2(E/2)/dy2, checked by
    central differences at a shape both turned and bent."""
    rest, masses, parts = two_parts(count=12, seed=1)
    generator = torch.Generator().manual_seed(2)
    y = rest @ exp_so3(torch.tensor([[0.4, 0.9, -0.3]], dtype=torch.float64))[0].T
    y = y + 0.2 * torch.randn(y.shape, generator=generator, dtype=torch.float64)
    half_energy = lambda flat: 0.5 * match_parts(flat.reshape(1, -1, 3), rest, masses, parts, 2).energy[0]
    flat, eps = y.reshape(-1), 1e-5
    steps = torch.eye(len(flat), dtype=torch.float64) * eps
    gradient = torch.stack([(half_energy(flat + d) - half_energy(flat - d)) / (2 * eps) for d in steps])
    matched = match_parts(y, rest, masses, parts, 2)
    torch.testing.assert_close(gradient, (masses[..., None] * matched.residual).reshape(-1), rtol=1e-7, atol=1e-9)

    def residual_force(flat_y):
        m = match_parts(flat_y.reshape(1, -1, 3), rest, masses, parts, 2)
        return (masses[..., None] * m.residual).reshape(-1)

    hessian = torch.stack([(residual_force(flat + d) - residual_force(flat - d)) / (2 * eps) for d in steps], 1)
    identity = torch.eye(len(flat), dtype=torch.float64).reshape(1, -1, 3, len(flat))
    torch.testing.assert_close(matching_hessian(matched, masses, parts, identity)[0], hessian, rtol=1e-6, atol=1e-8)


def test_at_rest_the_hessian_has_no_stiffness_along_a_part_s_rigid_motions():
    rest, masses, parts = two_parts(count=20, seed=3)
    count = rest.shape[1]
    identity = torch.eye(3 * count, dtype=torch.float64).reshape(1, count, 3, 3 * count)
    hessian = matching_hessian(match_parts(rest, rest, masses, parts, 2), masses, parts, identity)[0]
    eigenvalues = torch.linalg.eigvalsh(hessian)
    free = eigenvalues.abs() < 1e-7 * eigenvalues.max()  # SINGULAR's share of the inertia aside
    assert int(free.sum()) == 12  # six rigid motions per part
    assert float(eigenvalues.min()) > -1e-10 and float(eigenvalues[~free].min()) > 1e-3 * float(eigenvalues.max())


def test_parts_that_touch_along_a_line_are_joined_along_it():
    vertices, faces, parts = hinged_boxes()
    joints = find_joints(vertices, faces, parts)
    assert len(joints.points) > 2 and set(joints.first) == {0} and set(joints.second) == {1}
    np.testing.assert_allclose(joints.points[:, [0, 2]], np.tile([0.3, 0.7], (len(joints.points), 1)), atol=0.02)
    assert np.ptp(joints.points[:, 1]) > 0.25  # spread along the hinge, not one point


def test_parts_that_touch_nothing_are_joined_where_they_come_closest():
    """The lid raised 0.1 m: its edge and the box's face each other across the gap along the old hinge
    line, so they are joined along it (a hinge), not at one point."""
    vertices, faces, parts = hinged_boxes(gap=0.1)
    joints = find_joints(vertices, faces, parts)
    assert len(joints.points) > 2 and set(joints.first) == {0} and set(joints.second) == {1}
    assert ((joints.points[:, 2] >= 0.69) & (joints.points[:, 2] <= 0.81)).all()
    assert ((joints.points[:, 0] >= 0.25) & (joints.points[:, 0] <= 0.35)).all()
    assert np.ptp(joints.points[:, 1]) > 0.25


def test_a_chain_of_parts_is_joined_link_to_link():
    """Three slabs in a staircase, each touching the next along an edge: joints between neighbours
    only, each along its shared line."""
    pieces = [box_mesh((0.3, 0.2, 0.05), (0.3 * i, 0.0, 0.05 * i)) for i in range(3)]
    vertices = np.concatenate([v for v, _ in pieces])
    faces = np.concatenate([f + 8 * i for i, (_, f) in enumerate(pieces)])
    joints = find_joints(vertices, faces, loose_parts(faces, len(vertices)))
    pairs = set(zip(joints.first.tolist(), joints.second.tolist()))
    assert pairs == {(0, 1), (1, 2)}
    for link in (1, 2):
        at = joints.points[joints.second == link]
        np.testing.assert_allclose(at[:, [0, 2]], np.tile([0.3 * link, 0.05 * link], (len(at), 1)), atol=0.02)
