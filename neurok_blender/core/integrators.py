"""Time integration: an implicit step (the default), torchdiffeq's fixed-step and adaptive methods, and
a symplectic leapfrog.

The implicit step takes the stiff forces (contact, pins, the potential, the dampers) implicitly, so its
steps follow the motion, at one or two evaluations of the map each. The torchdiffeq methods integrate y = (q, q_dot,
W, E_d), where W is the work of point loads and E_d the dissipated energy, so energy bookkeeping is as
accurate as the motion itself. RK4 is torchdiffeq's step (Kutta's 3/8 rule) written out: the rollout
takes one step per call, and odeint's setup of its solver and tuple state cost as much as a quarter of
a force evaluation a step.
"""

import torch

from .dynamics import LagrangianSystem
from .options import AUTO, INTEGRATORS

FIXED_STEP = ("rk4", "midpoint", "heun3", "euler")
ADAPTIVE = ("dopri5", "bosh3", "dopri8")
STRUCTURE_PRESERVING = ("leapfrog",)
IMPLICIT = ("implicit",)
STEPPERS = tuple(name for name in INTEGRATORS if name != AUTO)  # the options' names, each in one group above
IMPLICIT_RAYLEIGH = ("leapfrog", "implicit")  # stable at any Rayleigh rate: their steps need not resolve it

FIXED_POINT_TOLERANCE = 1e-11  # relative change between iterations
FIXED_POINT_ITERATIONS = 50
# A deforming body turning slower than this (rad/s, |theta_dot|) skips the implicit step's second pass,
# where the first pass's inertial error is small and the pass would cost a quarter of a landing's
# rollout (docs/physics.md)
SECOND_PASS_SPIN = 1.0


def advance(system: LagrangianSystem, q, q_dot, t0: float, t1: float, method: str, rtol=1e-8, atol=1e-10):
    """Integrate from t0 to t1 with one step (fixed-step methods) or adaptively.

    Returns (q, q_dot, work of loads, dissipated energy) at t1.
    """
    if method == "leapfrog":
        return leapfrog(system, q, q_dot, t1 - t0, t0)
    if method == "rk4":
        return three_eighths(system, q, q_dot, t1 - t0, t0)
    if method == "implicit":
        return implicit_step(system, q, q_dot, t1 - t0, t0)
    if method not in STEPPERS:
        raise ValueError(f"unknown integrator {method!r}; choose one of {', '.join(STEPPERS)} "
                         f"({AUTO!r} is chosen among them by the rollout)")

    from torchdiffeq import odeint  # here: it brings scipy.integrate, 0.17 s of a Simulate that uses none of it

    def rhs(t, y):
        qq, vv, _, _ = y
        system.clock = float(t)
        acc, load_power, dissipated_power = system.acceleration(qq, vv)
        return vv, acc, load_power, dissipated_power

    zero = torch.zeros(q.shape[0], dtype=q.dtype)
    times = torch.tensor([t0, t1], dtype=q.dtype)
    if method in FIXED_STEP:
        options = {"step_size": t1 - t0}
        out = odeint(rhs, (q, q_dot, zero, zero), times, method=method, options=options)
    else:
        out = odeint(rhs, (q, q_dot, zero, zero), times, method=method, rtol=rtol, atol=atol)
    return tuple(y[-1] for y in out)


def three_eighths(system: LagrangianSystem, q, q_dot, h: float, t0: float = 0.0):
    """One step of Kutta's 3/8 rule (fourth order; torchdiffeq's "rk4") for y' = f(y), y = (q, q_dot, W, E_d):

        k1 = f(y),  k2 = f(y + h k1 / 3),  k3 = f(y + h (k2 - k1 / 3)),  k4 = f(y + h (k1 - k2 + k3))
        y1 = y + h (k1 + 3 (k2 + k3) + k4) / 8

    The energies W and E_d enter no rate, so only their rates are kept."""

    def rate(qq, vv, t):
        system.clock = t  # for what moves with time (a pin path)
        acc, load_power, dissipated_power = system.acceleration(qq, vv)
        return vv, acc, load_power, dissipated_power

    k1 = rate(q, q_dot, t0)
    k2 = rate(q + h * k1[0] / 3, q_dot + h * k1[1] / 3, t0 + h / 3)
    k3 = rate(q + h * (k2[0] - k1[0] / 3), q_dot + h * (k2[1] - k1[1] / 3), t0 + 2 * h / 3)
    k4 = rate(q + h * (k1[0] - k2[0] + k3[0]), q_dot + h * (k1[1] - k2[1] + k3[1]), t0 + h)
    dq, dq_dot, work, dissipated = ((a + 3 * (b + c) + d) * h / 8 for a, b, c, d in zip(k1, k2, k3, k4))
    return q + dq, q_dot + dq_dot, work, dissipated


def leapfrog(system: LagrangianSystem, q, q_dot, h: float, t0: float = 0.0):
    """Generalized Stoermer-Verlet for H(q, p) = 1/2 p^T M(q)^-1 p + U(q), p = M q_dot (Hairer et al., GNI):

        p_half = p_n + h/2 (dT/dq(q_n, M_n^-1 p_half) + Q_c(q_n) + Q_n - D_n v_half)    (implicit in p_half)
        q_n+1  = q_n + h/2 (M(q_n)^-1 + M(q_n+1)^-1) p_half                            (implicit in q_n+1)
        p_n+1  = p_half + h/2 (dT/dq(q_n+1, M_n+1^-1 p_half) + Q_c(q_n+1) + Q_n+1 - D_n+1 v_n+1)

    Symplectic and time-reversible for the conservative part Q_c. The other non-conservative forces Q
    (loads, contact damping, friction, drag) enter each half kick explicitly, at the velocity known at
    that point. The Rayleigh force -D v, linear in the velocity, is taken at the velocity each kick
    ends with (backward Euler within the kick: (M + h/2 D) v_half = ...): stable at any rate c with
    monotone decay, 1 / (1 + c h/2)^2 a step, and an overdamped deformation creeps at its own rate
    omega^2 / c whatever the step, where an explicit kick needs c h < 4 and rings near it. Each
    force's work in a kick is Q . (mean velocity across the kick).
    """
    s0 = system.state(q, q_dot)
    system.clock = t0
    cons0, loads0, diss0 = system.forces(q, q_dot, s0, rayleigh=False)
    transfer0 = system.transfer
    damping0 = system.damping_matrix(s0.mass_matrix)
    damped0 = s0.mass_matrix + 0.5 * h * damping0
    kick0 = (s0.mass_matrix @ q_dot[..., None])[..., 0] + 0.5 * h * (cons0 + loads0 + diss0)

    v_half = system.solve(damped0, kick0 + 0.5 * h * s0.mass.kinetic_gradient)
    for _ in range(FIXED_POINT_ITERATIONS):
        updated = system.solve(damped0, kick0 + 0.5 * h * system.map.mass_terms(q, v_half).kinetic_gradient)
        done = _converged(updated, v_half)
        v_half = updated
        if done:
            break
    p_half = (s0.mass_matrix @ v_half[..., None])[..., 0]

    q_new = q + h * v_half
    for _ in range(FIXED_POINT_ITERATIONS):
        updated = q + 0.5 * h * (v_half + system.solve(system.mass_matrix(q_new), p_half))
        done = _converged(updated, q_new)
        q_new = updated
        if done:
            break

    v1 = system.solve(system.mass_matrix(q_new), p_half)
    s1 = system.state(q_new, v1)
    system.clock = t0 + h
    cons1, loads1, diss1 = system.forces(q_new, v1, s1, rayleigh=False)
    transfer1 = system.transfer  # power into the contact springs from other bodies' motion (LagrangianSystem.forces)
    damping1 = system.damping_matrix(s1.mass_matrix)
    q_dot_new = system.solve(s1.mass_matrix + 0.5 * h * damping1,
                             p_half + 0.5 * h * (s1.mass.kinetic_gradient + cons1 + loads1 + diss1))

    def work(force0, force1):
        return 0.25 * h * ((force0 * (q_dot + v_half)).sum(-1) + (force1 * (v1 + q_dot_new)).sum(-1))

    rayleigh0 = -(damping0 @ v_half[..., None])[..., 0]
    rayleigh1 = -(damping1 @ q_dot_new[..., None])[..., 0]
    return q_new, q_dot_new, work(loads0, loads1) + 0.5 * h * (transfer0 + transfer1), -work(diss0 + rayleigh0, diss1 + rayleigh1)


def implicit_step(system: LagrangianSystem, q, q_dot, h: float, t0: float = 0.0):
    """One implicit step, the trapezoidal rule q_1 = q + h (v + v_1) / 2 with v_1 from
    LagrangianSystem.implicit_change: its stiff forces (contact, pins, the potential, the dampers)
    implicit, the rest (gravity, loads, the Coriolis and centrifugal terms) at the step's start. A
    second pass then takes gravity, the pins and the inertial terms by the trapezoidal rule on the
    momentum, M(q_1) v_1 - M(q) v = h (F(q, v) + F(q_1, v_1)) / 2 + the first pass's other impulses,
    with F = g moment + pins + dT/dq, by one Newton iteration with the first pass's matrix: a
    torque-free tumbling box then keeps its energy to 1e-4 over 10 s at 4 steps a frame, where the
    first pass alone (first order in them, M taken at the start) gained 24 %, and a rod swinging from
    two pins loses 0.7 % of its energy instead of gaining 4.5 % (the pins' stiffness is linearized
    without its turning). On learned coordinates, for a body turning faster than SECOND_PASS_SPIN,
    the correction solves for the rigid motion's six rows alone (the deformation's rows of the
    residual set to zero, the full matrix kept, so the deformation follows through its coupling): the
    deformation's own rows, where a stiff potential or its wall acts, would undo the first pass's
    implicit impulse along them (docs/physics.md).

    Two evaluations of the map a step, stable at any contact, pin or potential stiffness: the steps follow
    the motion, not the springs that hold it. An undamped linear spring keeps its energy at any step
    (at 2 atan(omega h / 2) / h, 7 % slow at omega h = 1), a contact spring's work is its energy's
    change, and the dampers only take energy out. Work and dissipation are booked at the step's
    mean velocity."""
    system.clock = t0
    s = system.state(q, q_dot)
    conservative, loads, dissipative = system.forces(q, q_dot, s, capped=False)
    change, resisted, pushed = system.implicit_change(q, q_dot, s, conservative + loads + dissipative
                                                      - s.mass.quadratic, h, t0)
    transfer = system.transfer  # the moving anchors' power over the step (implicit_change)
    turning = q_dot[:, 3:6].norm(dim=-1) > SECOND_PASS_SPIN if system.deforms else None
    if turning is not None and not bool(turning.any()):
        return _implicit_end(system, q, q_dot, h, t0, change, loads, pushed, dissipative, resisted, transfer)
    base, held, moving = system.smooth_step
    moved = h * (q_dot + 0.5 * change)
    ended = system.state(q + moved, q_dot + change)
    mass = s.mass_matrix
    # what the first pass gave besides gravity, the pins and the inertial terms (the contact, the
    # potential, damping, loads: their impulse) is kept
    kept = (mass @ change[..., None])[..., 0] - h * (system.smooth_forces(s, t0)
                                                     + 0.5 * (moving - (held @ moved[..., None])[..., 0]))
    momentum = (mass @ q_dot[..., None])[..., 0] + kept + 0.5 * h * (
        system.smooth_forces(s, t0, lagrangian=True) + system.smooth_forces(ended, t0 + h, lagrangian=True))
    residual = momentum - (ended.mass_matrix @ (q_dot + change)[..., None])[..., 0]
    if turning is not None:  # the learned coordinates' rows, and bodies not turning, keep the first pass (docstring)
        residual = torch.where(system.map.rigid_dofs & turning[:, None], residual, 0.0)
    change = change + system.solve(base, residual)
    return _implicit_end(system, q, q_dot, h, t0, change, loads, pushed, dissipative, resisted, transfer)


def _implicit_end(system, q, q_dot, h, t0, change, loads, pushed, dissipative, resisted, transfer):
    """The implicit step's end: (q_1, v_1, work, dissipated), booked at the step's mean velocity."""
    mean = q_dot + 0.5 * change
    system.clock = t0 + h  # where the step ends, as the energies are asked about next
    return (q + h * mean, q_dot + change, h * (((loads + pushed) * mean).sum(-1) + transfer),
            -h * ((dissipative + resisted) * mean).sum(-1))


def _converged(new, old):
    scale = torch.clamp(old.abs().max(), min=1e-300)
    return bool((new - old).abs().max() <= FIXED_POINT_TOLERANCE * scale)
