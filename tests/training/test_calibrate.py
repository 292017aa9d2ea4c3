"""The calibration's objective: the shape error sees the deformation, not where the body went."""

from types import SimpleNamespace

import numpy as np

from training.calibrate import shape_errors_over_time


def test_the_shape_error_ignores_rigid_motion_and_measures_a_stretch():
    rng = np.random.default_rng(0)
    rest = rng.normal(size=(200, 3))
    turn = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    turn *= np.sign(np.linalg.det(turn))  # a rotation, not a reflection
    moved = rest @ turn.T + np.array([3.0, -1.0, 2.0])
    center = moved.mean(0)
    stretched = center + 1.02 * (moved - center)
    sequence = SimpleNamespace(rest_vertices=rest, positions=np.stack([rest, moved, moved]))
    errors = shape_errors_over_time(np.stack([moved, rest, stretched]), sequence)
    diagonal = np.linalg.norm(np.ptp(rest, axis=0))
    np.testing.assert_allclose(errors[:2], 0.0, atol=1e-12)
    # the best rigid fit of a copy stretched about its centroid is the copy itself: 2 % of each arm is left
    np.testing.assert_allclose(errors[2], 0.02 * np.linalg.norm(moved - center, axis=1).mean() / diagonal, rtol=1e-9)
