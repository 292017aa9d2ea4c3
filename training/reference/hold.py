"""Pull and release, shared by the reference engines: the handle is pulled while the body is held.

A free body pulled at a handle only moves as a whole, so the hold balances the pull with a rigid
acceleration field (what the body would feel if it were accelerating freely under the pull):

    a     = F / M                      F = sum f_h,   M = sum_b m_b
    alpha = I^-1 tau                   tau = sum (x_h - c) x f_h,  I = inertia about the centre c
    f_b  -= m_b (a + alpha x (c_b - c)),   tau_b -= I_b alpha     (per body b, about its own centre)

Net force and torque are then zero: the handle moves relative to the body, which bends but stays put.
The handle is driven by a stiff damped spring to its target; everything else is damped until still.
"""

import numpy as np

SETTLE_TIME = 1.5  # s of held simulation, at most
STILL = 1e-4  # m/s: the hold has settled once every node moves slower than this
HANDLE_STIFFNESS = 400.0  # s^-2 (per unit handle mass): the spring pulling the handle to its target
DAMPING = 20.0  # s^-1 on every node during the hold


def handle_forces(masses_h, positions_h, targets_h, velocities_h, total_mass):
    """Spring-damper force (H, 3) pulling the handle nodes to their targets, scaled by the body's mass."""
    k = HANDLE_STIFFNESS * total_mass / len(masses_h)
    return k * (targets_h - positions_h) - 2.0 * np.sqrt(k * masses_h)[:, None] * velocities_h


def balancing_field(masses, centers, points, forces, inertias=None):
    """Counter-loads per body that cancel the net force and torque of ``forces`` applied at ``points``.

    ``masses`` (B,), ``centers`` (B, 3) body centres of mass, ``inertias`` (B, 3, 3) world inertia of
    each body about its own centre (None for point masses). Returns forces (B, 3) and torques (B, 3).
    """
    total = masses.sum()
    c = (masses[:, None] * centers).sum(0) / total
    r = centers - c
    net = forces.sum(0)
    torque = np.cross(points - c, forces).sum(0)
    # I = sum_b I_b + m_b (|r_b|^2 1 - r_b r_b^T)
    inertia = (masses[:, None, None] * ((r * r).sum(1)[:, None, None] * np.eye(3) - r[:, :, None] * r[:, None, :])).sum(0)
    if inertias is not None:
        inertia = inertia + inertias.sum(0)
    alpha = np.linalg.lstsq(inertia, torque, rcond=None)[0]  # lstsq: a collinear body has a singular I
    counter_forces = -masses[:, None] * (net / total + np.cross(alpha, r))
    counter_torques = np.zeros_like(centers) if inertias is None else -np.einsum("bij,j->bi", inertias, alpha)
    return counter_forces, counter_torques
