"""The engine against analytic mechanics (issue 2): exact numbers, not 'looks right'."""

import math

import numpy as np
import pytest
import torch

from neurok_blender.core import Conditions, Environment, Force, LagrangianSystem, RigidBodyMap, rollout, simulate
from neurok_blender.core.kinematics import MASS, KinematicMap
from neurok_blender.core.mesh import fibonacci_sphere
from neurok_blender.core.rotation import exp_so3, right_jacobian, rotation_rates, vee
from neurok_blender.core.trajectory import choose_substeps
from shapes import PendulumMap, SpringMap, box, overdamped_spring

G = 9.81
NO_GRAVITY = torch.zeros(3, dtype=torch.float64)
DOWN = torch.tensor([0.0, 0.0, -G], dtype=torch.float64)


def run(kmap, env, q0, q_dot0, frames, fps, method="leapfrog", substeps=4):
    system = LagrangianSystem(kmap, env)
    return rollout(system, q0, q_dot0, frames, fps, method, kmap.mass_points, substeps=substeps)


def half_periods(t, y):
    """Intervals between successive zero crossings of y, located by linear interpolation."""
    i = np.nonzero(np.sign(y[:-1]) != np.sign(y[1:]))[0]
    return np.diff(t[i] + (t[i + 1] - t[i]) * y[i] / (y[i] - y[i + 1]))


def complete_elliptic_k(k):
    """K(k) = pi / (2 AGM(1, sqrt(1 - k^2)))."""
    a, b = 1.0, math.sqrt(1 - k * k)
    for _ in range(40):  # converges quadratically; 40 rounds is far past float64
        a, b = (a + b) / 2, math.sqrt(a * b)
    return math.pi / (2 * a)


@pytest.mark.parametrize("method", ["leapfrog", "rk4", "dopri5"])
def test_free_fall_is_exact_before_contact(method):
    v, f = box(corner=(0.0, 0.0, 10.0))
    cond = Conditions(frames=25, velocity=(0.5, -1.0, 3.0), angular_velocity=(2.0, 1.0, -3.0), integrator=method)
    result = simulate(v, f, cond)
    center = v.mean(0)
    for k in (6, 12, 24):
        t = result.times[k]
        expected = center + np.array(cond.velocity) * t + 0.5 * np.array(cond.gravity) * t * t
        travelled = np.linalg.norm(expected - center)
        assert np.linalg.norm(result.coordinates[k, :3] - expected) < 1e-6 * travelled
        # the baked float32 vertices agree: a box's vertex centroid is its centre of mass
        centroid = result.positions[k].astype(np.float64).mean(0)
        assert np.linalg.norm(centroid - expected) < 1e-6 * np.linalg.norm(expected)


@pytest.mark.parametrize("amplitude_deg", [1.0, 90.0])
def test_pendulum_period(amplitude_deg):
    length = 1.5
    kmap = PendulumMap(length)
    q0 = torch.tensor([[math.radians(amplitude_deg)]], dtype=torch.float64)
    traj = run(kmap, Environment(gravity=DOWN), q0, torch.zeros_like(q0), frames=301, fps=60, substeps=1)
    periods = 2 * half_periods(traj.times, traj.coordinates[:, 0, 0])
    small = 2 * math.pi * math.sqrt(length / G)
    k = math.sin(math.radians(amplitude_deg) / 2)
    exact = 4 * math.sqrt(length / G) * complete_elliptic_k(k)
    reference = small if amplitude_deg < 5 else exact
    assert len(periods) >= 2
    assert abs(periods.mean() / reference - 1) < 0.005
    if amplitude_deg == 90:
        assert exact / small > 1.17  # the large-angle period really is longer: the test tells them apart


def test_quadratic_potential_gives_the_harmonic_period():
    kmap = SpringMap(stiffness=7.0, mass=2.0)
    q0 = torch.tensor([[0.3]], dtype=torch.float64)
    traj = run(kmap, Environment(gravity=NO_GRAVITY), q0, torch.zeros_like(q0), frames=151, fps=30, substeps=1)
    periods = 2 * half_periods(traj.times, traj.coordinates[:, 0, 0])
    assert abs(periods.mean() / (2 * math.pi * math.sqrt(2.0 / 7.0)) - 1) < 0.005


def tumbling_box():
    v, f = box((0.4, 1.0, 2.0))
    kmap, _ = RigidBodyMap.from_meshes([(v, f)], [3.0])
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.tensor([[0.3, -0.2, 1.0, 1.0, 4.0, 0.5]], dtype=torch.float64)
    return kmap, q0, q_dot0


def angular_momentum(kmap, q, q_dot):
    x, jac = kmap.jacobian(q, MASS)
    v = torch.einsum("bpik,bk->bpi", jac, q_dot)
    return (kmap.masses[..., None] * torch.cross(x, v, dim=-1)).sum(1)


def test_leapfrog_keeps_energy_over_1000_steps():
    """Conservative runs (no damping, loads or contact): a box tumbling under gravity and a 90-degree
    pendulum. Drift relative to the kinetic energy scale; the other integrators are in the benchmark."""
    kmap, q0, q_dot0 = tumbling_box()
    traj = run(kmap, Environment(gravity=DOWN), q0, q_dot0, frames=251, fps=50, substeps=4)
    total, kinetic = traj.energy["total"][:, 0], traj.energy["kinetic"][:, 0]
    assert np.abs(total - total[0]).max() / kinetic.max() < 1e-4

    pend = PendulumMap(1.0)
    q0 = torch.tensor([[math.pi / 2]], dtype=torch.float64)
    traj = run(pend, Environment(gravity=DOWN), q0, torch.zeros_like(q0), frames=1001, fps=200, substeps=1)
    total = traj.energy["total"][:, 0]
    assert np.abs(total - total[0]).max() / (1.0 * G * 1.0) < 1e-4


def test_torque_free_tumbling_conserves_angular_momentum():
    kmap, q0, q_dot0 = tumbling_box()
    system = LagrangianSystem(kmap, Environment(gravity=NO_GRAVITY))
    start = angular_momentum(kmap, q0, q_dot0)
    traj = rollout(system, q0, q_dot0, 51, 25, "leapfrog", kmap.mass_points, substeps=8)
    q, q_dot = torch.as_tensor(traj.coordinates[-1]), torch.as_tensor(traj.velocities[-1])
    end = angular_momentum(kmap, q, q_dot)  # the map's chart is the last frame's, as q is
    assert torch.linalg.norm(end - start) / torch.linalg.norm(start) < 1e-4
    # the body really tumbles: its spin axis moved (intermediate-axis rotation is not steady)
    assert np.abs(np.diff(traj.velocities[:, 0, 3:], axis=0)).max() > 0.1


def test_generalized_force_equals_virtual_work():
    torch.manual_seed(0)
    kmap, q0, _ = tumbling_box()
    q = q0 + 0.3 * torch.randn_like(q0)
    kmap.attach("loads", torch.randn(1, 7, 3, dtype=torch.float64))
    forces = torch.randn(1, 7, 3, dtype=torch.float64)
    _, jac = kmap.jacobian(q, "loads")
    generalized = torch.einsum("bpik,bpi->bk", jac, forces)
    for _ in range(3):
        dq = torch.randn_like(q)
        eps = 1e-6
        work = ((kmap.embed(q + eps * dq, "loads") - kmap.embed(q - eps * dq, "loads")) * forces).sum() / (2 * eps)
        assert abs(float((generalized * dq).sum()) - float(work)) < 1e-7 * float(forces.abs().sum())


def test_body_frame_mass_sums_match_forward_mode():
    """M, J^T m d2x, dT/dq and sum m J of the rigid map's closed form (rigid.posed_mass_terms) against
    ``KinematicMap.mass_terms``, nested forward-mode products through ``embed``, away from the chart's
    origin; the acting points' closed-form Jacobian against forward mode too."""
    torch.manual_seed(2)
    kmap, q0, _ = tumbling_box()
    kmap.orientation = torch.linalg.qr(torch.randn(1, 3, 3, dtype=torch.float64))[0]
    q, q_dot = q0 + torch.randn_like(q0), torch.randn_like(q0)
    closed, generic = kmap.mass_terms(q, q_dot), KinematicMap.mass_terms(kmap, q, q_dot)
    for field in ("mass_matrix", "quadratic", "kinetic_gradient", "moment"):
        torch.testing.assert_close(getattr(closed, field), getattr(generic, field), rtol=1e-12, atol=1e-12)
    kmap.attach("points", torch.randn(1, 5, 3, dtype=torch.float64))
    for closed, generic in zip(kmap.jacobian(q, "points"), KinematicMap.jacobian(kmap, q, "points")):
        torch.testing.assert_close(closed, generic, rtol=1e-12, atol=1e-12)


def test_rotation_rates_are_the_derivatives_of_the_right_jacobian():
    """D = d(T theta_dot)/dtheta in closed form against autograd, near zero and at 2 rad."""
    torch.manual_seed(3)
    theta = torch.randn(3, 3, dtype=torch.float64) * torch.tensor([[1e-9], [0.5], [2.0]], dtype=torch.float64)
    theta_dot = torch.randn(3, 3, dtype=torch.float64)
    turned, turn, change = rotation_rates(theta, theta_dot)
    torch.testing.assert_close(turned, exp_so3(theta))
    for i in range(3):
        expected = torch.autograd.functional.jacobian(lambda t: right_jacobian(t[None])[0] @ theta_dot[i], theta[i])
        torch.testing.assert_close(change[i], expected, rtol=1e-12, atol=1e-12)
        omega = vee(exp_so3(theta[i:i + 1]).transpose(1, 2) @ torch.autograd.functional.jvp(
            lambda t: exp_so3(t), theta[i:i + 1], theta_dot[i:i + 1])[1])
        torch.testing.assert_close((turn[i] @ theta_dot[i])[None], omega, rtol=1e-12, atol=1e-12)


def test_box_resting_on_the_ground_neither_sinks_nor_creeps():
    v, f = box((1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    result = simulate(v, f, Conditions(frames=49, fps=24, ground_height=0.0, mass=5.0))
    settled = result.positions[24:]
    assert -settled[..., 2].min() < 1e-3  # penetration below 1 mm
    creep = np.abs(settled[-1] - settled[0])
    assert creep.max() < 1e-5


def test_sliding_box_stops_at_the_coulomb_distance():
    mu, speed = 0.4, 3.0
    v, f = box((0.5, 0.5, 0.5), (0.0, 0.0, 0.0))
    result = simulate(v, f, Conditions(frames=49, fps=24, ground_height=0.0, velocity=(speed, 0, 0), friction=mu))
    travelled = result.positions[-1, :, 0].mean() - result.positions[0, :, 0].mean()
    expected = speed**2 / (2 * mu * G)
    assert abs(travelled / expected - 1) < 0.05
    assert abs(result.positions[-1, :, 0].mean() - result.positions[-5, :, 0].mean()) < 1e-4  # it has stopped


def test_a_box_pushed_below_its_friction_holds_and_pushed_above_it_slides():
    """Coulomb friction holds a push under mu N (regularized, it creeps at friction_regularization
    times the push over sqrt((mu N)^2 - push^2): here 0.6 mm/s) and gives way above it, where the box
    accelerates at F / m - mu g (measured over the second half second, after it settled on the ground)."""
    mu, mass = 0.5, 1.0
    v, f = box((0.5, 0.5, 0.5), (0.0, 0.0, 0.0))
    centre = {}
    for share in (0.5, 1.5):  # of mu m g, at the centre of mass (every vertex), for a second
        push = Force((share * mu * mass * G, 0.0, 0.0), vertices=list(range(len(v))), start_frame=0, end_frame=25)
        result = simulate(v, f, Conditions(frames=25, fps=24, ground_height=0.0, friction=mu, mass=mass, forces=[push]))
        centre[share] = result.positions[:, :, 0].mean(1)
    assert abs(centre[0.5][24] - centre[0.5][12]) < 1e-3
    speed = np.diff(centre[1.5]) * 24  # m/s over each frame
    np.testing.assert_allclose((speed[23] - speed[11]) / 0.5, 0.5 * mu * G, rtol=0.02)


@pytest.mark.parametrize("method", ["rk4", "leapfrog"])
def test_rayleigh_damping_decays_the_amplitude_as_exp_minus_alpha_t_over_2(method):
    """Mass-proportional damping D = alpha M on a small pendulum: theta'' + alpha theta' + w^2 theta = 0."""
    alpha = 0.8
    kmap = PendulumMap(1.0)
    q0 = torch.tensor([[0.01]], dtype=torch.float64)
    system = LagrangianSystem(kmap, Environment(gravity=DOWN, damping=alpha))
    traj = rollout(system, q0, torch.zeros_like(q0), 421, 60, method, kmap.mass_points, substeps=1)
    theta = traj.coordinates[:, 0, 0]
    peaks = [i for i in range(1, len(theta) - 1) if theta[i - 1] < theta[i] >= theta[i + 1]]
    ratio = theta[peaks[-1]] / theta[peaks[0]]
    assert abs(np.log(ratio) / (-alpha / 2 * traj.times[peaks[-1] - peaks[0]]) - 1) < 0.01
    # every joule lost is booked as dissipated, up to the integrator's own energy error: leapfrog's
    # oscillates at O((omega h)^2) = 3e-3 of the energy here, RK4's is of fourth order
    balance = traj.energy["balance"][:, 0]
    assert np.abs(balance).max() < {"rk4": 1e-6, "leapfrog": 1e-3}[method] * 9.81 * 0.01**2


def test_leapfrog_takes_any_rayleigh_rate_implicitly():
    """An overdamped spring (omega = 100 rad/s): after the fast mode dies, a creep at about omega^2 / c.
    Leapfrog takes the damping implicitly, so its steps are the spring's alone (9 a frame, c h up to
    460) and still follow the creep, without ringing."""
    omega, x0 = 100.0, 0.01
    for c in (1e3, 1e5):
        system, q0, q_dot0, exact = overdamped_spring(c, omega, x0)
        assert choose_substeps(system, 24.0, "leapfrog", q0, q_dot0) == 9
        trajectory = rollout(system, q0, q_dot0, 6, 24.0, "leapfrog", torch.zeros(1, 1, 3, dtype=torch.float64))
        expected = exact(trajectory.times)
        assert trajectory.refined_frames == 0
        np.testing.assert_allclose(trajectory.coordinates[:, 0, 0], expected, rtol=0, atol=0.01 * x0)
        assert np.all(np.diff(trajectory.coordinates[:, 0, 0]) < 0)  # no ringing
        # all of the spring's energy is dissipated, and booked up to leapfrog's own energy error, of
        # order (omega h)^2 / 4 = 5 % at these steps
        assert np.abs(trajectory.energy["balance"]).max() < 0.03 * 0.5 * omega**2 * x0**2


@pytest.mark.parametrize("damping", [0.0, 300.0, 1e5])
def test_auto_takes_the_implicit_step_at_omega_h_up_to_2_on_the_potential_whatever_the_damping(damping):
    """A potential of 1000 rad/s at 24 fps: ceil(1000 / (24 * 2)) = 21 steps a frame, damped or not
    (RK4 would take 42, and more for the damping)."""
    system = LagrangianSystem(SpringMap(stiffness=1e6, mass=1.0), Environment(gravity=NO_GRAVITY, damping=damping))
    q0, q_dot0 = torch.full((1, 1), 0.01, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    trajectory = rollout(system, q0, q_dot0, 3, 24.0, "auto", torch.zeros(1, 1, 3, dtype=torch.float64))
    assert trajectory.method == "implicit"
    assert trajectory.substeps == 21 == choose_substeps(system, 24.0, "implicit", q0, q_dot0)


def test_the_implicit_step_keeps_an_undamped_springs_energy_at_the_trapezoidal_rules_frequency():
    """The trapezoidal rule on a linear spring keeps its energy exactly at any step, and rings at
    2 atan(omega h / 2) / h: 7.3 % slow at omega h = 1 (100 rad/s, 100 steps a second, 6 s)."""
    system = LagrangianSystem(SpringMap(stiffness=1e4, mass=1.0), Environment(gravity=NO_GRAVITY))
    q0, q_dot0 = torch.full((1, 1), 0.01, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    trajectory = rollout(system, q0, q_dot0, 601, 100.0, "implicit", torch.zeros(1, 1, 3, dtype=torch.float64),
                         substeps=1)
    periods = 2 * half_periods(trajectory.times, trajectory.coordinates[:, 0, 0])
    assert abs(periods.mean() / (2 * math.pi * 0.01 / (2 * math.atan(0.5))) - 1) < 1e-3
    assert np.abs(trajectory.energy["balance"]).max() < 1e-8 * 0.5 * 1e4 * 0.01**2


@pytest.mark.parametrize("method", ["auto", "implicit"])
def test_a_box_tumbling_in_the_air_keeps_its_energy(method):
    """Torque-free tumbling of a flat box for 10 s: auto runs RK4 in flight while it spins; the
    implicit step's second pass takes the inertial terms by the trapezoidal rule on the momentum (its
    first pass alone, first order in them, gained 24 % of the energy)."""
    v, f = box((0.6, 0.3, 0.1), (0.0, 0.0, 100.0))
    result = simulate(v, f, Conditions(frames=241, fps=24, gravity=(0.0, 0.0, 0.0), angular_velocity=(3.0, 0.5, 4.0),
                                       integrator=method, sleep=False))
    kinetic = result.energy["kinetic"]
    assert np.abs(kinetic / kinetic[0] - 1).max() < {"auto": 1e-6, "implicit": 1e-3}[method]


def test_the_implicit_step_follows_an_overdamped_creep_without_ringing():
    """The spring of 100 rad/s damped at 1000 and 1e5 /s (c h up to 1000 at the automatic 4 steps a
    frame): the Rayleigh force at each step's end decays monotonically, and the creep at about
    omega^2 / c follows the exact solution within 3 % of the start (backward Euler's first-order
    error on the creep, e^(-c h) against 1 / (1 + c h) of its rate)."""
    omega, x0 = 100.0, 0.01
    for c in (1e3, 1e5):
        system, q0, q_dot0, exact = overdamped_spring(c, omega, x0)
        trajectory = rollout(system, q0, q_dot0, 6, 24.0, "auto", torch.zeros(1, 1, 3, dtype=torch.float64))
        assert trajectory.substeps == 4 and trajectory.refined_frames == 0
        np.testing.assert_allclose(trajectory.coordinates[:, 0, 0], exact(trajectory.times), rtol=0, atol=0.03 * x0)
        assert np.all(np.diff(trajectory.coordinates[:, 0, 0]) < 0)  # no ringing
        assert np.abs(trajectory.energy["balance"]).max() < 1e-6 * 0.5 * omega**2 * x0**2  # all booked


def test_air_drag_gives_the_terminal_velocity_g_over_c():
    v, f = box()
    result = simulate(v, f, Conditions(frames=121, fps=24, drag=2.0))
    speed = (result.coordinates[-1, 2] - result.coordinates[-2, 2]) * 24
    assert abs(speed / (-G / 2.0) - 1) < 1e-3
    assert abs(result.energy["balance"][-1]) < 1e-6 * abs(result.energy["gravity"][-1])


@pytest.mark.parametrize("restitution", [0.3, 0.7])
def test_a_flat_landing_keeps_the_restitution_fraction_of_its_speed(restitution):
    v, f = box((1.0, 1.0, 1.0), (0.0, 0.0, 0.1))
    result = simulate(v, f, Conditions(frames=61, fps=240, ground_height=0.0, restitution=restitution,
                                       friction=0.0, velocity=(0.0, 0.0, -2.0)))
    z = result.pose["translation"][:, 2]
    incoming = math.sqrt(2.0**2 + 2 * G * 0.1)
    lowest = int(np.argmin(z))
    outgoing = math.sqrt(2 * G * (z[lowest:].max() - 0.5))  # from the height it bounces back to
    assert abs(outgoing / incoming - restitution) < 0.05


def test_a_thin_plate_landing_on_its_edge_does_not_gain_energy():
    """A plate 8 mm thick lands on an edge with restitution 0 (a held-out pair of scissors): the
    points there turn about the edge with a quarter of the inertia they carry, and their dampers,
    each stable alone, together overshot within a step: it spun up and booked 8.8 J of 6.9 J too
    much. Capped together (rate h <= 1) it settles, and the balance stays within 15 %."""
    turn = np.array([[0.8, -0.6, 0.0], [0.36, 0.48, -0.8], [0.48, 0.64, 0.6]])
    v, f = box((0.14, 0.19, 0.008), (-0.07, -0.095, -0.004))
    result = simulate(v @ turn.T + [0.0, 0.0, 0.5], f,
                      Conditions(frames=30, ground_height=0.0, mass=1.13, friction=0.95, restitution=0.0,
                                 velocity=(-0.23, 1.42, 0.57), angular_velocity=(1.76, -0.75, 2.18)))
    energy = result.energy
    assert np.abs(energy["balance"]).max() < 0.15 * energy["total"][0]
    landed = int(np.argmax(energy["kinetic"])) + 1  # kinetic energy peaks just before the impact
    assert np.all(np.diff(energy["total"][landed:]) < 0.05 * energy["total"][0])  # it only loses energy after
    # (its kinetic energy may rise again as it tips over its edge and falls flat)
    assert energy["kinetic"][-1] < 1e-3 and result.positions[-1, :, 2].min() > -1e-3


def test_rolling_resistance_slows_a_rolling_ball_at_the_analytic_rate():
    """A ball of radius R rolling without slip under the ground's torque N a (N = m g):
    m x'' = -F, I w' = F R - N a and x' = w R give x'' = -g (a / R) / (1 + I / (m R^2)). The same ball
    without it is the reference: its contact points roll over as facets and brake it a little alone."""
    radius, mass, lever, speed = 0.5, 2.0, 0.1, 4.0
    shell = fibonacci_sphere(3000) * radius
    center = np.array([0.0, 0.0, radius])
    weights = np.full(len(shell), mass / len(shell))
    inertia = (weights * (shell[:, 0] ** 2 + shell[:, 2] ** 2)).sum()  # about the y axis it rolls on
    q0 = torch.tensor([[*center, 0.0, 0.0, 0.0]], dtype=torch.float64)
    q_dot0 = torch.tensor([[speed, 0.0, 0.0, 0.0, speed / radius, 0.0]], dtype=torch.float64)
    fps, frames = 60, 31  # half a second: measured 0.2 % off the analytic rate (0.4 % over a second)
    rolled = {}
    for arm in (0.0, lever):
        kmap = RigidBodyMap([center], [shell + center], [weights])
        env = Environment(gravity=DOWN, ground_height=torch.zeros(1, dtype=torch.float64), friction=1.0,
                          restitution=0.0, contact_points=torch.as_tensor(shell + center)[None],
                          contact_mass=torch.as_tensor(weights)[None], rolling_lever=arm)
        traj = rollout(LagrangianSystem(kmap, env), q0, q_dot0, frames, fps, "rk4", kmap.mass_points)
        t, x = traj.times[6:], traj.pose["translation"][6:, 0, 0]  # after the first contact settled
        rolled[arm] = 2 * np.polyfit(t, x, 2)[0]
        balance = traj.energy["balance"][:, 0]
        assert np.abs(balance).max() < 0.02 * 0.5 * mass * speed**2  # what friction and the torque take is booked
    expected = -G * (lever / radius) / (1 + inertia / (mass * radius**2))
    assert abs((rolled[lever] - rolled[0.0]) / expected - 1) < 0.02


def test_a_diverged_body_turns_nan_not_an_error_and_leaves_its_neighbour_alone():
    """Two balls pressed into the ground, one rolling against a lever arm, the other without: a NaN
    in one body's rotation must reach the rollout as NaN (it names the frame), not raise from the
    rolling resistance's eigenvalue solve, and the other body's acceleration must not change."""
    shell = fibonacci_sphere(200) * 0.5
    center, weights = np.array([0.0, 0.0, 0.5]), np.full(200, 0.01)
    kmap = RigidBodyMap([center, center], [shell + center] * 2, [weights, weights])
    env = Environment(gravity=DOWN, ground_height=torch.zeros(2, dtype=torch.float64),
                      contact_points=torch.as_tensor(np.stack([shell + center] * 2)),
                      contact_mass=torch.as_tensor(np.stack([weights, weights])),
                      rolling_lever=torch.tensor([0.1, 0.0], dtype=torch.float64))
    system = LagrangianSystem(kmap, env)
    system.set_interval(0.0, 1e-3)
    q = kmap.rest_coordinates() - torch.tensor([0.0, 0.0, 0.01, 0.0, 0.0, 0.0], dtype=torch.float64)
    q_dot = torch.zeros_like(q)
    q_dot[:, 4] = 2.0
    healthy = system.acceleration(q, q_dot)[0]
    assert torch.isfinite(healthy).all()
    q[0, 3] = float("nan")
    broken = system.acceleration(q, q_dot)[0]
    assert torch.isnan(broken[0]).all()
    torch.testing.assert_close(broken[1], healthy[1])


def test_a_body_hung_from_two_pins_swings_at_the_compound_pendulums_period():
    """A 1 m rod pinned at the two corners of one edge of its end hangs from that hinge: let go 5
    degrees off, it swings in the plane with T / 2 = pi sqrt(I / (M g d)) (1 + theta0^2 / 16), I about
    the hinge; the pins hold within a few g / k."""
    length, side = 1.0, 0.1
    v, f = box((length, side, side), (0.0, -side / 2, 0.0))
    hinge = [int(np.argmin(np.linalg.norm(v - p, axis=1))) for p in ([0, -side / 2, 0], [0, side / 2, 0])]
    arm = (v.mean(0) - v[hinge[0]])[[0, 2]]
    turn = math.radians(-85.0) - math.atan2(arm[1], arm[0])  # the arm 5 degrees off straight down
    c, s = math.cos(turn), math.sin(turn)
    v = (v - v[hinge[0]]) @ np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]]).T + [0.0, 0.0, 2.0]
    result = simulate(v, f, Conditions(frames=97, fps=48, pins=hinge))
    assert np.abs(result.positions[:, hinge] - v[hinge]).max() < 5 * G / 1e5
    x = result.pose["translation"][:, 0] - v[hinge[0], 0]
    d = np.linalg.norm(arm)
    inertia = (length**2 + side**2) / 12 + d**2  # per unit mass, about the hinge
    expected = math.pi * math.sqrt(inertia / (G * d)) * (1 + math.radians(5.0) ** 2 / 16)
    np.testing.assert_allclose(half_periods(result.times, x), expected, rtol=1e-3)


def test_pins_on_a_path_carry_the_body_and_the_work_they_do_is_booked():
    """A 1 m rod hung from two corners whose pins move 1 m sideways over a second, then stop: the
    pinned corners follow within the pins' give, the body does not sleep while they move, and the
    power the moving pins put into their springs is booked as work, so the energy balance closes
    (checked with RK4 at fine steps, where the integration's own error is far below the books')."""
    v, f = box((1.0, 0.1, 0.1), (0.0, 0.0, 1.0))
    pins = [i for i in range(len(v)) if v[i, 2] > 1.05 and v[i, 1] < 0.05]  # the top edge's two corners
    frames, fps = 37, 24
    shift = np.clip(np.arange(frames) / fps, 0.0, 1.0)  # m
    path = v[pins][None] + shift[:, None, None] * np.array([1.0, 0.0, 0.0])
    for substeps, integrator in ((None, "auto"), (60, "rk4")):
        result = simulate(v, f, Conditions(frames=frames, fps=fps, pins=pins, pin_path=path, category="rigid",
                                           substeps=substeps, integrator=integrator))
        assert np.abs(result.positions[:, pins] - path).max() < 0.01
        assert result.asleep_frames == 0
    assert result.energy["load_work"][12] > 0.1  # the pins pulled it along
    assert np.abs(result.energy["balance"]).max() < 0.01 * np.abs(result.energy["load_work"]).max()
