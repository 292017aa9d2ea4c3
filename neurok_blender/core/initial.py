"""Initial conditions from what the user can see: positions and velocities of material points.

    q0     = argmin_q  sum_i w_i |F_i(q) - x0_i|^2          (Gauss-Newton)
    q_dot0 = argmin_qd sum_i w_i |J_i(q0) qd - x0_dot_i|^2   (normal equations)

With mass weights the second line reads M q_dot0 = J^T m x0_dot: the generalized momentum of the
requested velocity field, so a rigid body gets exactly the requested linear and angular momentum.
"""

import torch
from .kinematics import KinematicMap

GAUSS_NEWTON_ITERATIONS = 30
TOLERANCE = 1e-12


def fit_initial_state(kmap: KinematicMap, points, targets, velocities, weights, start=None):
    """Fit (q0, q_dot0) of shape (B, n) to target positions and velocities (B, P, 3) of rest points
    (B, P, 3); the position fit starts from ``start`` (default: the rest coordinates)."""
    q = kmap.rest_coordinates() if start is None else start
    w = weights[..., None, None]
    for _ in range(GAUSS_NEWTON_ITERATIONS):
        x, jac = kmap.jacobian(q, points)
        residual = x - targets
        if residual.abs().max() <= TOLERANCE * (targets.abs().max() + 1):
            break
        normal = torch.einsum("bpik,bpil->bkl", w * jac, jac)
        step = torch.linalg.solve(normal, -torch.einsum("bpik,bpi->bk", w * jac, residual))
        q = q + step
    _, jac = kmap.jacobian(q, points)
    normal = torch.einsum("bpik,bpil->bkl", w * jac, jac)
    q_dot = torch.linalg.solve(normal, torch.einsum("bpik,bpi->bk", w * jac, velocities))
    return q, q_dot

