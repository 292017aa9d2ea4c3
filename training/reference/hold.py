"""Pull and release for the deformable reference engines: a handle pulled while the far end is held.

A free body pulled at one spot only moves as a whole, so the hold needs a second grip: the part of
the body farthest from the handle (``anchor``) stays at rest while the handle is moved by the
displacement, ramped in over ``RAMP`` and then held while everything else is damped still, gravity
off. At release (frame 0) both grips let go and the body starts from rest (plus any initial
velocity). The learned solver fits its initial state to the handle alone
(``core.initial.pulled_coordinates``), which on most held-out elastic bodies moves the handle a few
per cent of the way; the learned space holds these shapes far better than that fit finds them
(docs/benchmarks.md, elastic fidelity). (Articulated objects bend only at joints, so their engine finds the held
pose by inverse kinematics with the same grips.)
"""

import numpy as np

RAMP = 0.4  # s over which the handle moves to its target
SETTLE_TIME = 1.2  # s of held simulation, at most, ramp included
STILL = 1e-3  # m/s (or rad/s): the hold has settled once every coordinate moves slower than this
DAMPING = 20.0  # s^-1 on every velocity during the hold
ANCHOR_REACH = 0.8  # the anchor: points at least this fraction of the farthest distance from the handle


def anchor(points, handle_points) -> np.ndarray:
    """Indices of ``points`` held at rest: those far from the handle's centroid."""
    distance = np.linalg.norm(points - handle_points.mean(0), axis=1)
    return np.flatnonzero(distance >= ANCHOR_REACH * distance.max())


def ramp(t: float) -> float:
    """Fraction of the displacement applied at time t of the hold: smoothstep over RAMP, then 1."""
    s = min(t / RAMP, 1.0)
    return s * s * (3 - 2 * s)


def hold_steps(timestep: float) -> int:
    return int(np.ceil(SETTLE_TIME / timestep))


def damping_factor(timestep: float) -> float:
    """Velocities are multiplied by this every held step: exp(-DAMPING dt)."""
    return float(np.exp(-DAMPING * timestep))
