"""The public simulate() API: shapes, bad input, forces, cancellation, divergence, batching."""

import dataclasses

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from neurok_blender.core import (Conditions, Environment, Force, LagrangianSystem, Pull, RigidBodyMap,
                                 SimulationCancelled, SimulationError, live, rollout, simulate)
from neurok_blender.core.dynamics import SUPPORT_ROLLING
from neurok_blender.core.mesh import bbox_diagonal, convex_hull
from neurok_blender.core.trajectory import REST_SUBSTEPS
from shapes import box
from training.shapes.solids import uv_sphere

NO_GRAVITY = (0.0, 0.0, 0.0)


def test_result_shapes_and_types():
    v, f = box(corner=(0.0, 0.0, 1.0))
    result = simulate(v, f, Conditions(frames=10, fps=30))
    assert result.positions.shape == (10, 8, 3) and result.positions.dtype == np.float32
    assert result.coordinates.shape == (10, 6)
    np.testing.assert_allclose(result.times, np.arange(10) / 30)
    np.testing.assert_allclose(result.positions[0], v, atol=1e-6)
    assert set(result.energy) >= {"kinetic", "potential", "gravity", "contact", "load_work", "dissipated", "balance"}


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(frames=1), "frames"),
        (dict(fps=0.0), "fps"),
        (dict(mass=-2.0), "mass"),
        (dict(velocity=(1.0, np.nan, 0.0)), "velocity"),
        (dict(gravity=(0.0, 0.0)), "gravity"),
        (dict(restitution=1.5), "restitution"),
        (dict(category="jelly"), "category"),
        (dict(integrator="verlet2000"), "integrator"),
        (dict(substeps=0), "substeps"),
        (dict(forces=[Force((1.0, 0.0, 0.0))]), "exactly one of point or vertices"),
        (dict(forces=[Force((1.0, 0.0, 0.0), vertices=[99])]), "vertices"),
        (dict(forces=[Force((1.0, 0.0, 0.0), point=(0.0, 0.0, 0.0), start_frame=5, end_frame=5)]), "end_frame"),
        (dict(pull=Pull([99], (0.0, 0.0, 0.1))), "pull.vertices"),
        (dict(pull=Pull(list(range(8)), (0.0, 0.0, 0.1))), "leave some vertices free"),
        (dict(pull=Pull([0], (0.0, float("nan"), 0.1))), "pull.displacement"),
        (dict(pull=Pull([0], (0.0, 0.0, 0.1))), "rigid category has no deformation"),
    ],
)
def test_bad_conditions_are_refused_with_the_field_named(change, message):
    v, f = box()
    with pytest.raises(ValueError, match=message):
        simulate(v, f, Conditions(**change))


def test_force_impulse_is_exact():
    """F on the centre of mass for frames [2, 8): momentum changes by F * 6 / fps, position by its integral."""
    v, f = box(corner=(0.0, 0.0, 0.0))
    fps, mass, push = 24.0, 3.0, np.array([0.0, 4.5, 0.0])
    force = Force(tuple(push), point=(0.5, 0.5, 0.5), start_frame=2, end_frame=8)
    result = simulate(v, f, Conditions(frames=13, fps=fps, gravity=NO_GRAVITY, mass=mass, forces=[force]))
    t0, t1, end = 2 / fps, 8 / fps, 12 / fps
    a = push / mass
    expected = 0.5 * a * (t1 - t0) ** 2 + a * (t1 - t0) * (end - t1)
    np.testing.assert_allclose(result.coordinates[-1, :3] - result.coordinates[0, :3], expected, atol=1e-9)
    np.testing.assert_allclose(result.pose["rotation"][-1], np.eye(3), atol=1e-12)  # through the centre: no spin
    shift = result.positions[-1] - result.positions[0]
    np.testing.assert_allclose(shift, shift[:1].repeat(8, 0), atol=1e-6)
    assert abs(result.energy["load_work"][-1] - 0.5 * mass * np.sum((a * (t1 - t0)) ** 2)) < 1e-6


def test_off_center_force_spins_and_vertex_forces_share_the_vector():
    v, f = box()
    top_corners = [i for i in range(8) if v[i, 2] > 0.5 and v[i, 0] > 0.5]
    by_vertices = Force((0.0, 0.0, 6.0), vertices=top_corners, start_frame=0, end_frame=3)
    by_points = Force((0.0, 0.0, 6.0), point=v[top_corners], start_frame=0, end_frame=3)
    a = simulate(v, f, Conditions(frames=6, gravity=NO_GRAVITY, forces=[by_vertices]))
    b = simulate(v, f, Conditions(frames=6, gravity=NO_GRAVITY, forces=[by_points]))
    np.testing.assert_allclose(a.positions, b.positions, atol=1e-6)
    assert np.ptp(a.positions[-1][:, 2]) > 1.01  # tilted


def test_output_points_follow_the_body():
    v, f = box()
    points = np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]])
    result = simulate(v, f, Conditions(frames=5, angular_velocity=(0.0, 0.0, 2.0)), points=points)
    body = simulate(v, f, Conditions(frames=5, angular_velocity=(0.0, 0.0, 2.0)))
    assert result.positions.shape == (5, 2, 3)
    np.testing.assert_allclose(result.positions[:, 1], body.positions[:, 0], atol=1e-6)  # vertex 0 is (0, 0, 0)


def test_progress_reports_every_frame_and_can_cancel():
    v, f = box()
    seen = []
    simulate(v, f, Conditions(frames=5), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    with pytest.raises(SimulationCancelled, match="frame 2"):
        simulate(v, f, Conditions(frames=5), progress=lambda done, total: done < 2)


def test_a_diverging_rollout_stops_and_names_the_frame():
    v, f = box()
    huge = Force((1e308, 0.0, 0.0), point=(0.0, 0.0, 0.0), start_frame=3, end_frame=4)
    with pytest.raises(SimulationError, match="between frames 3 and 4"):
        simulate(v, f, Conditions(frames=8, forces=[huge], gravity=NO_GRAVITY))
    on_ground = Conditions(frames=8, forces=[huge], ground_height=-0.05)  # the contact caps see the NaN state too
    with pytest.raises(SimulationError, match="between frames 3 and 4"):
        simulate(v, f, on_ground)


def test_initial_velocity_field_sets_linear_and_angular_momentum():
    v, f = box((1.0, 2.0, 0.5))
    result = simulate(v, f, Conditions(frames=2, fps=1000, gravity=NO_GRAVITY, velocity=(1.0, -2.0, 0.5),
                                       angular_velocity=(0.0, 0.0, 3.0)))
    velocity = (result.positions[1] - result.positions[0]).astype(np.float64) * 1000
    center = v.mean(0)
    expected = np.array([1.0, -2.0, 0.5]) + np.cross([0.0, 0.0, 3.0], v - center)
    np.testing.assert_allclose(velocity, expected, atol=0.02)  # finite difference over 1 ms


def test_bodies_in_one_batch_move_as_they_would_alone():
    meshes = [box((1.0, 1.0, 1.0)), box((0.5, 2.0, 1.0), (3.0, 0.0, 0.0))]
    q_dot = torch.tensor([[0.0, 0.0, 1.0, 1.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.0, -1.0, 3.0]], dtype=torch.float64)
    gravity = torch.tensor([0.0, 0.0, -9.81], dtype=torch.float64)

    def run(indices):
        kmap, _ = RigidBodyMap.from_meshes([meshes[i] for i in indices], [1.0 + i for i in indices])
        system = LagrangianSystem(kmap, Environment(gravity=gravity))
        return rollout(system, kmap.rest_coordinates(), q_dot[indices], 10, 24, "rk4", kmap.mass_points, substeps=2)

    together = run([0, 1])
    for i in (0, 1):
        alone = run([i])
        np.testing.assert_allclose(together.points[:, i], alone.points[:, 0], atol=1e-6)


@pytest.mark.parametrize("method", ["rk4", "leapfrog", "dopri5"])
def test_fast_spin_about_a_principal_axis_turns_by_omega_t(method):
    """80 rad/s at 24 fps is 3.3 rad a frame: the chart must be re-centred within frames."""
    v, f = box((1.0, 2.0, 3.0), (-0.5, -1.0, -1.5))
    omega, frames, fps = 80.0, 13, 24.0
    result = simulate(v, f, Conditions(frames=frames, fps=fps, gravity=NO_GRAVITY, angular_velocity=(0, 0, omega),
                                       integrator=method))
    angle = omega * (frames - 1) / fps
    c, s = np.cos(angle), np.sin(angle)
    expected = v @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T
    np.testing.assert_allclose(result.positions[-1], expected, atol=2e-4)


def test_auto_substeps_resolve_the_stiffest_spring():
    from neurok_blender.core.trajectory import choose_substeps
    from shapes import SpringMap

    system = LagrangianSystem(SpringMap(stiffness=1e4, mass=1.0), Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q, q_dot = torch.ones(1, 1, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    assert choose_substeps(system, 24.0, "rk4", q, q_dot) == 5  # omega = 100 rad/s, omega h <= 1
    assert choose_substeps(system, 24.0, "dopri5", q, q_dot) == 1


def test_auto_substeps_resolve_the_stiffness_at_the_start_too():
    """A pulled start sits where a stiffening potential is stiffer than at rest (shapes.StiffeningMap:
    omega 5 times as high at s = 2). Undamped, the body comes back there, and the whole run keeps the
    start's steps."""
    from neurok_blender.core.trajectory import choose_substeps
    from shapes import StiffeningMap

    system = LagrangianSystem(StiffeningMap(stiffness=1e4, mass=1.0), Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q_dot = torch.zeros(1, 1, dtype=torch.float64)
    assert choose_substeps(system, 24.0, "rk4", torch.zeros(1, 1, dtype=torch.float64), q_dot) == 5
    assert choose_substeps(system, 24.0, "rk4", torch.full((1, 1), 2.0, dtype=torch.float64), q_dot) == 21
    trajectory = rollout(system, torch.full((1, 1), 2.0, dtype=torch.float64), q_dot, 4, 24.0, "rk4",
                         torch.zeros(1, 1, 3, dtype=torch.float64))
    assert trajectory.substeps == 21


@pytest.mark.parametrize("method, rest_method, tolerance", [("rk4", "rk4", 1e-3), ("auto", "implicit", 1e-2)])
def test_a_damped_stiff_start_takes_its_steps_until_it_relaxes(method, rest_method, tolerance):
    """Damped, the stiff start relaxes within frames: the run is sized at rest, and each frame that
    starts stiffer than rest takes the steps its start needs (a pulled pair of scissors, sized by its
    start for all of 1000 frames, took 168 RK4 steps each). It follows a 60-step RK4 reference without
    a frame redone: RK4 to 5e-4 of the pull (measured 4.7e-4, at the first frame, which takes the
    start's 21 RK4 steps either way), the implicit step (omega h <= 2 on the potential: 11 steps on the
    first frame) to 5e-3 (measured 3.2e-3; leapfrog's first frame was 0.9 % off)."""
    from shapes import StiffeningMap

    system = LagrangianSystem(StiffeningMap(stiffness=1e4, mass=1.0),
                              Environment(gravity=torch.zeros(3, dtype=torch.float64), damping=300.0))
    q0, q_dot0 = torch.full((1, 1), 2.0, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    out = torch.zeros(1, 1, 3, dtype=torch.float64)
    trajectory = rollout(system, q0, q_dot0, 12, 24.0, method, out)
    reference = rollout(system, q0, q_dot0, 12, 24.0, "rk4", out, substeps=60)
    assert trajectory.method == rest_method
    assert trajectory.substeps < 21 and trajectory.refined_frames == 0
    np.testing.assert_allclose(trajectory.coordinates[:, 0, 0], reference.coordinates[:, 0, 0], rtol=0,
                               atol=tolerance)


def test_auto_substeps_resolve_strong_damping():
    """An overdamped spring, c = 1000 /s and omega = 100 rad/s (shapes.overdamped_spring). Steps sized
    for the spring alone (9 a frame, c h = 4.6) leave RK4's stable range (c h < 2.8); the damping's own
    bound, c h <= 1, takes 42 and follows the solution without redoing a frame."""
    from neurok_blender.core.trajectory import choose_substeps
    from shapes import overdamped_spring

    x0 = 0.01
    system, q0, q_dot0, exact = overdamped_spring(1000.0, 100.0, x0)
    assert choose_substeps(system, 24.0, "rk4", q0, q_dot0) == 42
    trajectory = rollout(system, q0, q_dot0, 6, 24.0, "rk4", torch.zeros(1, 1, 3, dtype=torch.float64))
    expected = exact(trajectory.times)
    assert trajectory.refined_frames == 0
    np.testing.assert_allclose(trajectory.coordinates[:, 0, 0], expected, rtol=0, atol=1e-6 * x0)


def test_initial_positions_are_fitted_by_least_squares():
    """Gauss-Newton recovers the pose that carries the rest points onto moved targets."""
    from neurok_blender.core.initial import fit_initial_state

    v, f = box((1.0, 2.0, 0.5))
    kmap, _ = RigidBodyMap.from_meshes([(v, f)], [1.0])
    truth = kmap.rest_coordinates() + torch.tensor([[0.3, -0.2, 1.0, 0.4, -0.7, 0.2]], dtype=torch.float64)
    kmap.attach("corners", torch.as_tensor(v, dtype=torch.float64)[None])
    targets = kmap.embed(truth, "corners")
    q_dot_true = torch.tensor([[1.0, 0.0, -1.0, 0.5, 0.2, -0.3]], dtype=torch.float64)
    _, jac = kmap.jacobian(truth, "corners")
    velocities = torch.einsum("bpik,bk->bpi", jac, q_dot_true)
    q, q_dot = fit_initial_state(kmap, "corners", targets, velocities, torch.ones(1, 8, dtype=torch.float64))
    torch.testing.assert_close(q, truth, rtol=0, atol=1e-10)
    torch.testing.assert_close(q_dot, q_dot_true, rtol=0, atol=1e-10)


def test_too_few_steps_are_refined_and_a_blow_up_is_refused():
    """A 1000 rad/s spring at 24 fps: rk4 is stable for omega h < 2.8, so 2 steps a frame (omega h =
    21) blow up within the first frame. Frames are redone with 16 steps, which is stable (and, so close
    to the edge, damped: the safety net is for stability, the automatic step count for accuracy);
    with at most 8 steps it stops with an error instead of handing back finite garbage."""
    from shapes import SpringMap

    system = LagrangianSystem(SpringMap(stiffness=1e6, mass=1.0), Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q0, q_dot0 = torch.full((1, 1), 0.01, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    points = torch.zeros(1, 1, 3, dtype=torch.float64)
    trajectory = rollout(system, q0, q_dot0, 6, 24.0, "rk4", points, substeps=2)
    assert trajectory.refined_frames >= 1 and np.isfinite(trajectory.coordinates).all()
    energy = trajectory.energy["total"][:, 0]
    assert np.all(energy <= energy[0] * 1.001)
    with pytest.raises(SimulationError, match="unstable .* between frames 0 and 1, even with 8 steps"):
        rollout(system, q0, q_dot0, 6, 24.0, "rk4", points, substeps=1)


def test_a_frame_redone_from_its_start_starts_from_its_orientation():
    """30 rad/s at 10 fps with 4 steps a frame: the chart is re-centred after the second step. The
    first attempt at frame 1 goes non-finite at its last step (injected), after that re-centring; the
    redone frame must start from the orientation frame 0 ended with, not the failed attempt's (found:
    a spinning pair of spectacles redone from a turned reference started deep in the ground, was shot
    2 km up and stopped as "unstable even with 216 steps")."""
    v, f = box((1.0, 2.0, 3.0), (-0.5, -1.0, -1.5))
    kmap, _ = RigidBodyMap.from_meshes([(v, f)], [1.0])
    system = LagrangianSystem(kmap, Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    accelerate, calls = system.acceleration, []

    def failing_once(q, q_dot):
        calls.append(None)
        q_ddot, load_power, dissipated_power = accelerate(q, q_dot)
        return q_ddot * (torch.nan if len(calls) == 16 else 1.0), load_power, dissipated_power  # 4 steps x 4 stages

    system.acceleration = failing_once
    omega, fps, frames = 30.0, 10.0, 3
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, omega]], dtype=torch.float64)
    points = torch.as_tensor(v)[None]
    trajectory = rollout(system, q0, q_dot0, frames, fps, "rk4", points)
    assert trajectory.substeps == 4 and trajectory.refined_frames == 1
    angle = omega * (frames - 1) / fps
    c, s = np.cos(angle), np.sin(angle)
    np.testing.assert_allclose(trajectory.points[-1, 0], v @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T,
                               atol=1e-3)


def test_fast_learned_coordinates_get_more_steps():
    """A mass crossing a sextic well at 1000 /s (the learned coordinates' wall): steps sized by the
    stiffness at rest (none) cross the wall in one step, and the energy goes off (measured over these 6
    frames, about 5 swings: 65 %, 3 frames redone); bounded to MAX_LATENT_DRIFT of travel per step, it
    holds to 0.1 % (measured 0.011 %)."""
    from shapes import WallMap

    system = LagrangianSystem(WallMap(stiffness=1.0), Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q0, q_dot0 = torch.zeros(1, 1, dtype=torch.float64), torch.full((1, 1), 1000.0, dtype=torch.float64)
    trajectory = rollout(system, q0, q_dot0, 6, 24.0, "rk4", torch.zeros(1, 1, 3, dtype=torch.float64))
    energy = trajectory.energy["total"][:, 0]
    assert trajectory.refined_frames == 0 and np.abs(energy / energy[0] - 1).max() < 1e-3
    turning = (3 * 1000.0**2) ** (1 / 6)  # 1/2 v0^2 = s^6 / 6
    assert 0.9 * turning < np.abs(trajectory.coordinates).max() <= turning * (1 + 1e-6)


def test_a_body_in_the_ground_starts_on_it_with_its_forces_moved_along():
    """Half in the ground, a box is lifted by the depth of its lowest vertex, reported, and a force's
    point moves with it, so the push acts where it was put on the body."""
    v, f = box(corner=(-0.5, -0.5, -0.5))
    push = Force((0.0, 5.0, 0.0), point=(0.5, 0.0, 0.0), start_frame=0, end_frame=2)
    result = simulate(v, f, Conditions(frames=3, ground_height=0.0, gravity=NO_GRAVITY, forces=[push]))
    assert result.report.lifted == pytest.approx(0.5)
    np.testing.assert_allclose(result.positions[0], v + [0.0, 0.0, 0.5], atol=1e-9)
    # pushed sideways at the height of its centre: it slides and does not turn about x
    assert result.positions[-1, :, 1].mean() > 1e-3
    spin = result.pose["rotation"][-1]
    assert abs(spin[1, 2]) < 1e-9 and abs(spin[2, 1]) < 1e-9


def test_a_live_body_steps_the_frames_simulate_makes_and_its_forces_act_over_one_frame():
    """``live`` gives simulate's frames one per step; a force passed to a step acts as a Conditions
    force whose window is that frame, and the run's books count its work."""
    v, f = box(corner=(0.0, 0.0, 0.5))
    push = Force((0.0, 6.0, 0.0), point=(0.5, 0.5, 1.0), start_frame=3, end_frame=4)
    expected = simulate(v, f, Conditions(frames=8, ground_height=0.0, forces=[push])).positions
    body = live(v, f, Conditions(ground_height=0.0))
    frames = [body.positions()]
    for frame in range(1, 8):
        frames.append(body.step([Force(push.vector, point=push.point)] if frame == 4 else []))
    np.testing.assert_allclose(np.array(frames), expected, atol=1e-12)
    assert body.frame == 7 and body.time == pytest.approx(7 / 24)
    body.reset()
    np.testing.assert_allclose(body.positions(), expected[0], atol=1e-12)
    np.testing.assert_allclose(body.step(), expected[1], atol=1e-12)


def test_a_live_body_refuses_bad_forces_and_a_rigid_one_has_no_material_to_adjust():
    v, f = box(corner=(0.0, 0.0, 0.5))
    body = live(v, f, Conditions(ground_height=0.0))
    with pytest.raises(ValueError, match=r"forces\[0\].vector"):
        body.step([Force((0.0, np.inf, 0.0), point=(0.5, 0.5, 1.0))])
    with pytest.raises(ValueError, match=r"forces\[0\].vertices"):
        body.step([Force((0.0, 1.0, 0.0), vertices=[8])])
    with pytest.raises(ValueError, match="rigid body has no stiffness"):
        body.adjust(stiffness=2.0)
    assert body.frame == 0  # nothing stepped


def test_frames_in_flight_take_the_bodys_steps_and_contact_always_the_grounds():
    """A box dropped from 0.5 m: the frames that start clear of the ground run at the rigid body's
    4 steps, the landing and resting ones at the ground spring's 14 (a frame that meets the ground
    is redone at those), and the motion is the one at 14 steps throughout (a free fall is exact at
    any step)."""
    v, f = box(corner=(0.0, 0.0, 0.5))
    conditions = Conditions(frames=20, ground_height=0.0, integrator="rk4")  # the implicit step's own: 5 and 4
    body = live(v, f, conditions)
    frames, steps = [body.positions()], []
    for _ in range(19):
        frames.append(body.step())
        steps.append(body.run.steps)
    assert body.run.substeps == 14 and body.run.flight_substeps == 4
    assert steps[:6] == [4] * 6 and steps[-1] == 14  # falls 0.5 m in 0.32 s (frame 7.7), then rests
    fixed = simulate(v, f, dataclasses.replace(conditions, substeps=14)).positions
    np.testing.assert_allclose(np.array(frames), fixed, atol=1e-9)


def test_frames_on_the_ground_take_the_motions_steps_and_an_impact_the_contacts():
    """The box dropped from 0.5 m under the implicit step: the landing frames run at the ground
    spring's 5 steps (a frame on the ground in which a contact point hits or leaves its surface
    faster than IMPACT_SPEED is redone at those), so it bounces as it does at 5 steps throughout,
    and the frames it spends on the ground at REST_SUBSTEPS (1), where its springs act at each step's
    end: it rests within 0.1 mm of where it rests at 5 steps. At 1 and 2 steps the trapezoidal rule's
    springs (a pair reaching the ground within a step meets a weak average force) made a box on a
    table hop by 12 and 3 mm."""
    v, f = box(corner=(0.0, 0.0, 0.5))
    conditions = Conditions(frames=36, ground_height=0.0)
    body = live(v, f, conditions)
    frames, steps = [body.positions()], []
    for _ in range(35):
        frames.append(body.step())
        steps.append(body.run.steps)
    assert body.run.substeps == 5 and body.run.rest_substeps == REST_SUBSTEPS == 1
    landed = steps.index(5, steps.index(4))  # the first frame after its flight's 4 steps
    awake = [n for n in steps if n]  # it sleeps once at rest
    assert steps[landed:landed + 2] == [5, 5] and awake[-6:] == [1] * 6
    assert simulate(v, f, conditions).steps == sum(steps)  # the run's count, as the live body took them
    fixed = simulate(v, f, dataclasses.replace(conditions, substeps=5)).positions
    bottom, fixed_bottom = np.array(frames)[:, :, 2].min(1), fixed[:, :, 2].min(1)
    assert abs(bottom[landed:].max() - fixed_bottom[landed:].max()) < 1e-3  # the bounce's height
    assert np.abs(bottom[-12:] - fixed_bottom[-1]).max() < 1e-4  # at rest, still


def test_pins_are_checked_and_hold_a_falling_body_by_one_corner():
    v, f = box(corner=(0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="pins must lie"):
        simulate(v, f, Conditions(pins=[8]))
    with pytest.raises(ValueError, match="pins must be a non-empty"):
        simulate(v, f, Conditions(pins=[]))
    result = simulate(v, f, Conditions(frames=25, pins=[0], velocity=(1.0, 0.0, 0.0)))
    assert np.abs(result.positions[:, 0] - v[0]).max() < 2e-3  # held, where a free box falls 2.9 m
    assert np.linalg.norm(result.positions[-1] - result.positions[0], axis=1).max() > 0.5  # it swings about it
    assert set(result.energy) >= {"pins"} and result.energy["pins"].max() > 0


def test_a_body_at_rest_sleeps_until_a_force_wakes_it_and_a_moving_one_never_sleeps():
    """A box set on the ground comes to rest within a few frames and then sleeps (its frames repeat,
    unintegrated), drawn where the full integration draws it; a push at frame 30 wakes it, and it
    moves as the unslept run does (up to the kinetic energy below the sleep threshold that sleeping
    took); a spinning box never sleeps."""
    v, f = box(corner=(0.0, 0.0, 0.0))
    push = Force((20.0, 0.0, 0.0), point=(0.5, 0.5, 0.5), start_frame=30, end_frame=33)
    conditions = Conditions(frames=60, ground_height=0.0, forces=[push])
    slept = simulate(v, f, conditions)
    awake = simulate(v, f, dataclasses.replace(conditions, sleep=False))
    assert 10 < slept.asleep_frames < 30 and awake.asleep_frames == 0
    np.testing.assert_allclose(slept.positions[:29], awake.positions[:29], atol=1e-6)
    assert slept.positions[-1, :, 0].min() > 0.1  # woken and pushed along
    np.testing.assert_allclose(slept.positions, awake.positions, atol=1e-4)
    spinning = simulate(v, f, Conditions(frames=40, gravity=NO_GRAVITY, angular_velocity=(0.0, 0.0, 0.5)))
    assert spinning.asleep_frames == 0
    with pytest.raises(ValueError, match="sleep"):
        simulate(v, f, Conditions(sleep="yes"))


def test_a_live_body_at_rest_sleeps_and_a_push_wakes_it():
    v, f = box(corner=(0.0, 0.0, 0.0))
    body = live(v, f, Conditions(ground_height=0.0))
    for _ in range(20):
        resting = body.step()
    assert body.run.asleep and body.run.steps == 0
    pushed = body.step([Force((30.0, 0.0, 0.0), point=(0.5, 0.5, 0.5))])
    assert not body.run.asleep and body.run.steps > 0
    assert (pushed[:, 0] - resting[:, 0]).min() > 1e-3


def test_a_ball_rests_on_its_own_lowest_point_not_on_its_contact_samples_hull():
    """A rigid UV sphere of 0.3 m radius dropped on the ground, at any turn: it comes to rest where it
    landed, within 2 cm, its lowest vertex within 2 mm of the ground, and sleeps. On the hull of its
    128 contact samples alone it sank 16 mm (6.3-6.7 mm with the ground raised to meet its surface);
    rolling free of them, without the rolling resistance, a nudge from the landing carried it off by
    up to 60 cm."""
    ball, faces = uv_sphere(22, 45)
    for turn in ([0.0, 0.0, 0.0], [0.4, -1.1, 2.0], [2.5, 0.3, -0.7]):
        v = 0.3 * ball @ Rotation.from_rotvec(turn).as_matrix().T + [0.0, 0.0, 0.5]
        result = simulate(v, faces, Conditions(frames=96, ground_height=0.0, category="rigid"))
        lowest = result.positions[48:, :, 2].min(1)
        centre = result.positions.mean(1)
        assert lowest.min() > -2e-3
        assert np.abs(centre[-1, :2] - centre[0, :2]).max() < 0.02
        assert result.asleep_frames > 0


def test_a_rolling_ball_slows_by_its_rolling_resistance_alone():
    """A rigid ball of 0.3 m radius set rolling at 2 m/s on the ground slows at the rolling
    resistance's (5/7) g a / r (lever a, a solid sphere rolling without slipping, 0.073 m/s^2) and
    at most 40 % more (its contact samples near its bottom brush the ground: 0.02 m/s^2 without the
    resistance), and its energy books close: it rolls on its support point. Over its 128 contact
    samples, as a polygon landing on each next corner, it kept 0.28 m/s of 2 after 2 s."""
    ball, faces = uv_sphere(22, 45)
    radius, speed = 0.3, 2.0
    v = radius * ball + [0.0, 0.0, radius]
    result = simulate(v, faces, Conditions(frames=49, ground_height=0.0, category="rigid", friction=0.5,
                                           velocity=(speed, 0.0, 0.0), angular_velocity=(0.0, speed / radius, 0.0)))
    along = result.positions.mean(1)[:, 0]
    t = result.times
    late = t > 0.25  # after the start's settling into the ground
    slowing = -2 * np.polyfit(t[late], along[late], 2)[0]
    lever = SUPPORT_ROLLING * bbox_diagonal(v[convex_hull(v).indices])
    assert 1.0 < slowing / (5 / 7 * 9.81 * lever / radius) < 1.4
    assert np.diff(along)[-1] * 24 > 0.85 * speed
    assert np.abs(result.energy["balance"]).max() < 0.03 * result.energy["kinetic"][0]
