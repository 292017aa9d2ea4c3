"""The initial state: the pose the user holds the body in and the velocity field it starts with.

    q0     = argmin_q  sum_i w_i |F_i(q) - x0_i|^2          (Gauss-Newton)
    q_dot0 = argmin_qd sum_i w_i |J_i(q0) qd - x0_dot_i|^2   (normal equations)

With mass weights the second line reads M q_dot0 = J^T m x0_dot: the generalized momentum of the
requested velocity field, so a rigid body gets exactly the requested linear and angular momentum.
The field is x0_dot = v + omega x (x0 - c) about the centre of mass c; the pose x0 is the rest shape,
or under a pull the shape that moves the handle by the pull's displacement (``pulled_coordinates``).
"""

import numpy as np
import torch

from .kinematics import MASS, KinematicMap
from .neural import NeuralBodyMap
from .options import Conditions

GAUSS_NEWTON_ITERATIONS = 30
TOLERANCE = 1e-12
PULL_ITERATIONS = 30
PULL_REGULARIZATION = 1e-4  # Levenberg-Marquardt damping relative to the mean diagonal of J^T J
HANDLE = "handle"  # the map's point set of the pull's handle


def initial_state(kmap: KinematicMap, conditions: Conditions, vertices: np.ndarray, center: torch.Tensor):
    """(q0, q_dot0, the share of the pull the handle reached or None) of one body (B = 1) that starts
    from rest or held by ``conditions.pull`` (its handle among ``vertices``, world, m) and moves with the
    velocity field of ``conditions``, spinning about ``center`` (3,), its centre of mass."""
    start, reached = kmap.rest_coordinates(), None
    if conditions.pull is not None:
        start, reached = pulled_coordinates(kmap, vertices[np.asarray(conditions.pull.vertices)],
                                            np.asarray(conditions.pull.displacement, dtype=np.float64))
    held = kmap.embed(start, MASS)
    velocities = velocity_field(conditions, held, center)
    q0, q_dot0 = fit_initial_state(kmap, MASS, held, velocities, kmap.masses, start=start)
    return q0, q_dot0, reached


def velocity_field(conditions: Conditions, points: torch.Tensor, center: torch.Tensor) -> torch.Tensor:
    """v + omega x (x - c) at ``points`` (B, P, 3), m/s: the body's initial velocity and spin."""
    omega = torch.as_tensor(conditions.angular_velocity, dtype=points.dtype).expand_as(points)
    return torch.as_tensor(conditions.velocity, dtype=points.dtype) + torch.cross(omega, points - center, dim=-1)


def fit_initial_state(kmap: KinematicMap, name: str, targets, velocities, weights, start=None):
    """Fit (q0, q_dot0) of shape (B, n) to target positions and velocities (B, P, 3) of the points
    attached as ``name``; the position fit starts from ``start`` (default: the rest coordinates)."""
    q = kmap.rest_coordinates() if start is None else start
    w = weights[..., None, None]
    for _ in range(GAUSS_NEWTON_ITERATIONS):
        x, jac = kmap.jacobian(q, name)
        residual = x - targets
        if residual.abs().max() <= TOLERANCE * (targets.abs().max() + 1):
            break
        normal = torch.einsum("bpik,bpil->bkl", w * jac, jac)
        step = torch.linalg.solve(normal, -torch.einsum("bpik,bpi->bk", w * jac, residual))
        q = q + step
    _, jac = kmap.jacobian(q, name)
    normal = torch.einsum("bpik,bpil->bkl", w * jac, jac)
    q_dot = torch.linalg.solve(normal, torch.einsum("bpik,bpi->bk", w * jac, velocities))
    return q, q_dot


def pulled_coordinates(kmap: NeuralBodyMap, handle: np.ndarray, displacement: np.ndarray):
    """q with the handle's points moved by ``displacement`` through the deformation alone (the pose
    stays: the pull bends the body, it does not carry it), by Levenberg-Marquardt on

        s = argmin_s sum_h |x_h(s) - (xbar_h + d)|^2

    with s kept inside the wall (``neural.wall_radius``). Returns q and the share of the displacement
    the handle reached (1 = all of it; a learned space may not bend that far, and the rest of the way
    is not forced).
    """
    points = torch.as_tensor(handle, dtype=kmap.dtype)[None]
    kmap.attach(HANDLE, points)
    target = points + torch.as_tensor(displacement, dtype=kmap.dtype)
    q = kmap.rest_coordinates()
    for _ in range(PULL_ITERATIONS):
        x, jac = kmap.jacobian(q, HANDLE)
        js = jac[..., 6:].reshape(-1, jac.shape[-1] - 6)
        residual = (x - target).reshape(-1)
        normal = js.T @ js
        damping = PULL_REGULARIZATION * normal.diagonal().mean().clamp_min(1e-30)
        step = torch.linalg.solve(normal + damping * torch.eye(len(normal), dtype=kmap.dtype), -js.T @ residual)
        reduced = q[:, 6:] + step[None]
        reduced = reduced * torch.clamp(kmap.wall_radius / reduced.norm().clamp_min(1e-30), max=1.0)  # off the wall
        done = bool((reduced - q[:, 6:]).abs().max() < 1e-9)
        q = torch.cat([q[:, :6], reduced], 1)
        if done:
            break
    moved = (kmap.embed(q, HANDLE) - points).mean(1)[0].numpy()
    reach = float(moved @ displacement / max(displacement @ displacement, 1e-30))
    return q, reach
