"""Learned coordinates in the engine, on a small random decoder: the physics must hold for any decoder."""

import numpy as np
import pytest
import torch

from neurok_blender.core import Environment, LagrangianSystem, rollout
from neurok_blender.core import trajectory as trajectory_module
from neurok_blender.core.articulation import find_joints
from neurok_blender.core.dynamics import ACTING
from neurok_blender.core.mesh import box_mesh
from neurok_blender.core.kinematics import MASS, KinematicMap
from neurok_blender.core.model import ModelConfig, NeuROKModel, prepare_shape, shape_tensors
from neurok_blender.core.options import EXPANSIONS
from neurok_blender.core.neural import MASS_FLOOR, NeuralBodyMap, NeuralBodyStack, inertia_floor
from neurok_blender.core.reduction import active_subspace
from neurok_blender.core.rigid import RigidBodyMap
from neurok_blender.core.rotation import exp_so3
from neurok_blender.core.surface import sample_surface
from neurok_blender.core.trajectory import Run

from shapes import hinged_boxes

TINY = ModelConfig(width=32, heads=2, tokens=8, channels=4, encoder_depth=1, decoder_depth=1, frequencies=4,
                   encoder_points=128, queries=32)


def make_body(expansion, count=40, condense=True, hinged=False):
    """A box (``hinged``: with a lid hinged to it, an articulated body) on a small random decoder that
    really deforms, its mass at ``count`` surface samples."""
    torch.manual_seed(0)
    model = NeuROKModel(TINY).double()
    with torch.no_grad():  # a decoder that really deforms
        model.head[-1].weight.mul_(30.0)
    vertices, faces, parts = hinged_boxes() if hinged else (*box_mesh((0.6, 0.4, 0.2), corner=(-0.3, -0.2, 0.5)), None)
    shape = prepare_shape(vertices, faces, TINY)
    features, query_features, _ = shape_tensors(model, shape, dtype=torch.float64)
    prior_mean, tokens = model.prior(features)
    subspace = active_subspace(model, prior_mean.detach(), tokens.detach(), query_features, coordinates=3)
    points = sample_surface(vertices, faces, count, np.random.default_rng(1)).points
    return NeuralBodyMap(model, shape, subspace, points, np.full(count, 2.0 / count), frequency=2.0,
                         expansion=expansion, condense=condense,
                         joints=find_joints(vertices, faces, parts) if hinged else None), vertices


@pytest.fixture(scope="module", params=EXPANSIONS)
def body(request):
    return make_body(request.param)


def test_the_rest_coordinates_give_the_rest_shape_and_the_jacobian_its_derivative(body):
    kmap, _ = body
    q0 = kmap.rest_coordinates()
    torch.testing.assert_close(kmap.embed(q0, MASS), kmap.mass_points)
    q = q0 + torch.tensor([[0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.5, -0.4, 0.3]], dtype=torch.float64)
    x, jac = kmap.jacobian(q, MASS)
    h = 1e-6
    for k in range(q.shape[1]):
        e = torch.zeros_like(q)
        e[0, k] = h
        column = (kmap.embed(q + e, MASS) - kmap.embed(q - e, MASS)) / (2 * h)
        torch.testing.assert_close(jac[..., k], column, atol=1e-7, rtol=1e-6)
    assert jac[..., 6:].abs().max() > 1e-3  # the latent really moves the points


def test_the_inertia_floor_lifts_only_the_directions_that_move_too_little_mass():
    """M_ss + A has the eigenvectors of M_ss, each eigenvalue max(lambda, MASS_FLOOR mu); on the
    random decoder's box the floor lifts its least massive direction and leaves its heaviest alone."""
    rotation = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))[0]
    eigenvalues = torch.tensor([1e-6, 0.5, 2.0, 5.0], dtype=torch.float64)
    rest = rotation @ torch.diag(eigenvalues) @ rotation.T
    mu = eigenvalues.mean()
    lifted = torch.linalg.eigh(rest + inertia_floor(rest[None], mu[None])[0])
    torch.testing.assert_close(lifted.eigenvalues, eigenvalues.clamp(min=MASS_FLOOR * mu))
    torch.testing.assert_close((lifted.eigenvectors.T @ rotation).abs(), torch.eye(4, dtype=torch.float64))
    kmap, _ = make_body("quadratic")
    at_rest = kmap.mass_terms(kmap.rest_coordinates(), torch.zeros(1, kmap.n_dof, dtype=torch.float64)).mass_matrix[0, 6:, 6:]
    bare = torch.linalg.eigvalsh(at_rest - kmap.mass_floor[0])
    floored = torch.linalg.eigvalsh(at_rest)
    assert bare[0] < MASS_FLOOR * kmap.wall_mass[0] <= bare[-1]  # this decoder has both kinds
    torch.testing.assert_close(floored, bare.clamp(min=float(MASS_FLOOR * kmap.wall_mass[0])))


def test_body_frame_mass_sums_match_forward_mode():
    """The learned map's closed-form MassTerms (rigid.posed_mass_terms on its quadratic field) and
    Jacobian against nested forward-mode products through its ``embed``, turned, moved and deformed;
    its mass matrix carries the inertia floor A on top of the mass points' sums."""
    kmap, _ = make_body("quadratic")
    torch.manual_seed(4)
    q = kmap.rest_coordinates() + 0.4 * torch.randn(1, kmap.n_dof, dtype=torch.float64)
    q_dot = torch.randn_like(q)
    closed, generic = kmap.mass_terms(q, q_dot), KinematicMap.mass_terms(kmap, q, q_dot)
    closed.mass_matrix[:, 6:, 6:] -= kmap.mass_floor
    for field in ("mass_matrix", "quadratic", "kinetic_gradient", "moment"):
        torch.testing.assert_close(getattr(closed, field), getattr(generic, field), rtol=1e-10, atol=1e-10)
    for closed, generic in zip(kmap.jacobian(q, MASS), KinematicMap.jacobian(kmap, q, MASS)):
        torch.testing.assert_close(closed, generic, rtol=1e-10, atol=1e-10)


def test_the_jacobian_at_some_points_is_theirs_of_the_whole_set(body):
    """``jacobian(q, name, index)``: the rows index[b] of each body's x and J, by the quadratic field
    (quadratic expansion) and by forward mode (the network)."""
    kmap, _ = body
    q = kmap.rest_coordinates() + torch.tensor([[0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.5, -0.4, 0.3]], dtype=torch.float64)
    index = torch.tensor([[7, 2, 2, 0]])
    whole, some = kmap.jacobian(q, MASS), kmap.jacobian(q, MASS, index)
    for all_rows, rows in zip(whole, some):
        assert rows.shape[:2] == (1, 4)
        torch.testing.assert_close(rows, all_rows[:, [7, 2, 2, 0]], rtol=0, atol=1e-12)


def test_the_jacobian_of_picked_drawn_points_is_their_derivative(body):
    """A drawn set (blended by sparse products, which carry no derivative) gives x and J at picked
    points through their own gathered skinning: x as drawn, J as finite differences of the drawing, to
    the rounding of its single precision (DRAWN_DTYPE): h = 1e-3 leaves 1e-4 of it in a difference."""
    kmap, _ = body
    kmap.attach("drawn", kmap.mass_points[:, :12], output=True)
    q = kmap.rest_coordinates() + torch.tensor([[0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.5, -0.4, 0.3]], dtype=torch.float64)
    rows = [9, 2, 2, 0]
    x, jac = kmap.jacobian(q, "drawn", torch.tensor([rows]))
    torch.testing.assert_close(x, kmap.embed(q, "drawn")[:, rows], rtol=0, atol=1e-6)
    h = 1e-3
    for k in range(q.shape[1]):
        e = torch.zeros_like(q)
        e[0, k] = h
        column = (kmap.embed(q + e, "drawn") - kmap.embed(q - e, "drawn"))[:, rows] / (2 * h)
        torch.testing.assert_close(jac[..., k], column, atol=2e-4, rtol=1e-3)


def test_the_centre_of_mass_falls_at_g_while_the_shape_wobbles(body):
    kmap, _ = body
    system = LagrangianSystem(kmap, Environment(gravity=torch.tensor([0.0, 0.0, -9.81], dtype=torch.float64)))
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.zeros_like(q0)
    q_dot0[0, 6] = 3.0  # set the shape wobbling
    trajectory = rollout(system, q0, q_dot0, 3, 24.0, "rk4", kmap.mass_points, substeps=4)
    m = kmap.masses[0, :, None].numpy()
    centers = (np.asarray(trajectory.points[:, 0], dtype=np.float64) * m).sum(1) / m.sum()
    _, jacobian = kmap.jacobian(q0, MASS)
    velocity = (torch.einsum("bpik,bk->pi", jacobian, q_dot0).numpy() * m).sum(0) / m.sum()  # the wobble moves it too
    t = np.arange(3)[:, None] / 24.0
    # the translation row of the Euler-Lagrange equation is the total momentum balance, exact up to
    # the integrator (rk4 at 96 steps/s: measured 1e-8 m after 2 frames, of a 3.4 cm fall)
    np.testing.assert_allclose(centers - centers[0], velocity * t + [0.0, 0.0, -0.5 * 9.81] * t**2, atol=1e-4)
    assert np.abs(trajectory.coordinates[:, 0, 6]).max() > 0.05  # while it wobbles


def test_without_gravity_or_damping_the_energy_stays(body):
    kmap, _ = body
    system = LagrangianSystem(kmap, Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 1.5]], dtype=torch.float64)  # a wobble at 2 Hz
    trajectory = rollout(system, q0, q_dot0, 3, 24.0, "rk4", kmap.mass_points, substeps=4)
    total = sum(trajectory.energy[k][:, 0] for k in ("kinetic", "potential"))
    # a sixth of a swing: energy flows into the spring (measured 75 % of it by the third frame)
    assert trajectory.energy["potential"][:, 0].max() > 0.5 * total[0]
    # rk4's own error: measured 1.1e-5 of the total at 4 substeps (both expansions), 5.5e-4 at 1
    assert np.abs(total - total[0]).max() < 1e-4 * total[0]


def test_a_rollout_draws_its_frames_in_passes_as_each_frame_drew_alone(monkeypatch):
    kmap, vertices = make_body("quadratic")
    system = LagrangianSystem(kmap, Environment(gravity=torch.tensor([0.0, 0.0, -9.81], dtype=torch.float64)))
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.tensor([[0.0, 0.0, 1.0, 20.0, -5.0, 10.0, 2.0, -1.0, 1.5]], dtype=torch.float64)  # spun: recentered
    drawn = torch.as_tensor(vertices, dtype=torch.float64)[None]
    monkeypatch.setattr(trajectory_module, "DRAWN_POINTS", 2 * drawn.shape[1])  # passes of two frames
    start = kmap.snapshot()  # the rollout turns the map's reference orientation
    points = rollout(system, q0, q_dot0, 5, 24.0, "rk4", drawn, substeps=4).points
    kmap.restore(start)  # the same start again
    run = Run(system, q0, q_dot0, 24.0, "rk4", drawn, substeps=4)
    alone = [run.positions().clone()]
    for _ in range(4):
        run.advance()
        alone.append(run.positions().clone())
    np.testing.assert_allclose(points, torch.stack(alone).numpy(), atol=1e-6)
    assert np.abs(points[-1] - points[0]).max() > 0.05  # it turned and moved


@pytest.mark.parametrize("learned", [True, False])
def test_a_change_of_chart_carries_the_acting_points_over(learned):
    kmap = make_body("quadratic")[0] if learned else RigidBodyMap.from_meshes(
        [box_mesh((0.6, 0.4, 0.2), corner=(-0.3, -0.2, 0.5))], [2.0], torch.float64)[0]
    points = kmap.embed(kmap.rest_coordinates(), MASS)[:, :6]
    system = LagrangianSystem(kmap, Environment(gravity=torch.zeros(3, dtype=torch.float64), contact_points=points,
                                                contact_mass=torch.full((1, 6), 0.1, dtype=torch.float64)))
    start = kmap.snapshot()
    q = kmap.rest_coordinates() + torch.tensor([[0.1, -0.2, 0.05, 0.7, -0.4, 0.3] + [0.5, -0.4, 0.3][:kmap.n_dof - 6]],
                                               dtype=torch.float64)
    system.state(q, torch.ones_like(q))  # the acting points at q
    moved, _ = system.recenter(q, torch.ones_like(q))
    carried = system._acting(moved)
    fresh = kmap.jacobian(moved, ACTING)
    kmap.restore(start)
    assert float(moved[0, 3:6].abs().max()) == 0.0  # a new chart
    for a, b in zip(carried, fresh):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def test_the_quadratic_expansion_agrees_with_the_network_to_second_order():
    (quadratic, _), (exact, _) = make_body("quadratic"), make_body("exact")
    points = quadratic.mass_points
    exact.attach("points", points)
    direction = torch.tensor([[1.0, -0.5, 0.8]], dtype=torch.float64)

    def error(step):
        s = step * direction
        with torch.no_grad():
            network = exact.deformed(s, "points")
        return float((quadratic.deformed(s, MASS) - network).abs().max()), float((network - points).abs().max())

    (small, moved), (half, _) = error(0.4), error(0.2)
    assert moved > 1e-3  # the step really deforms the body
    assert small < 0.05 * moved  # close ...
    assert 6.0 < small / half < 10.0  # ... and the gap is third order: halving the step divides it by 8


def test_the_deformation_has_no_rigid_part(body):
    """Mean-axis frame: the latent moves neither the centre of mass nor, to first order, the orientation,
    so rigid and deformation coordinates do not trade inertia."""
    kmap, _ = body
    s = torch.tensor([[0.8, -0.6, 0.5]], dtype=torch.float64)
    with torch.no_grad():
        u = kmap.deformed(s, MASS) - kmap.mass_points
    m = kmap.masses[0, :, None]
    assert u.abs().max() > 1e-3
    torch.testing.assert_close((m * u[0]).sum(0), torch.zeros(3, dtype=torch.float64), atol=1e-12, rtol=0)
    x, jac = kmap.jacobian(kmap.rest_coordinates(), MASS)
    # M's rigid-latent block at rest: zero says sum m du/ds = 0 and sum m r x du/ds = 0 (the turn, first order)
    coupling = torch.einsum("p,pik,pil->kl", kmap.masses[0], jac[0], jac[0])[:6, 6:]
    assert coupling.abs().max() < 1e-10


def test_the_closed_form_potential_gradient_and_hessian_are_the_potential_s():
    kmap, _ = make_body("quadratic")
    q = kmap.rest_coordinates() + torch.tensor([[0.1, 0.0, 0.2, 0.3, -0.1, 0.2, 1.5, -2.0, 2.5]], dtype=torch.float64)
    kmap.set_plastic_rest(torch.tensor([[0.3, 0.2, -0.4]], dtype=torch.float64))  # u . Z counts, not only Y^T Y
    autograd = torch.func.grad(lambda qq: kmap.potential(qq).sum())(q)
    closed = kmap.potential_gradient(q)
    assert autograd[:, 6:].abs().max() > 0
    torch.testing.assert_close(closed, autograd)
    hessian = torch.func.hessian(lambda qq: kmap.potential(qq).sum())(q)[:, :, 0]
    torch.testing.assert_close(kmap.potential_hessian(q), hessian)


def test_an_articulated_body_s_gradient_and_hessian_are_its_potential_s():
    """Shape matching per part and joint springs (articulation.py): the closed forms against autograd
    (gradient) and central differences of the gradient (Hessian: the SVD's second derivative is not
    autograd's), away from rest and from the plastic rest."""
    kmap, _ = make_body("quadratic", 200, hinged=True)
    assert kmap.parts is not None and kmap.joint_masses.shape[1] > 2
    q = kmap.rest_coordinates() + torch.tensor([[0.1, 0.0, 0.2, 0.3, -0.1, 0.2, 1.5, -2.0, 2.5]], dtype=torch.float64)
    kmap.set_plastic_rest(torch.tensor([[0.3, 0.2, -0.4]], dtype=torch.float64))
    gradient = kmap.potential_gradient(q)
    assert gradient[:, 6:].abs().max() > 0
    torch.testing.assert_close(gradient, torch.func.grad(lambda qq: kmap.potential(qq).sum())(q))
    steps = 1e-6 * torch.eye(q.shape[1], dtype=torch.float64)
    differences = torch.stack([(kmap.potential_gradient(q + d) - kmap.potential_gradient(q - d))[0] / 2e-6 for d in steps], 1)
    torch.testing.assert_close(kmap.potential_hessian(q)[0], differences, rtol=1e-5, atol=1e-8)


def test_a_softer_articulated_material_bends_its_parts_and_keeps_its_joints():
    """with_material(frequency, joint_frequency=...): the parts' springs at the new frequency, the
    joints' at their own, V = 1/2 omega^2 (matching + wall) + 1/2 omega_j^2 joints."""
    kmap, _ = make_body("quadratic", 200, hinged=True)
    soft = kmap.with_material(0.2, None, joint_frequency=2.0)
    q = kmap.rest_coordinates() + torch.tensor([[0.0] * 6 + [1.5, -2.0, 2.5]], dtype=torch.float64)
    s = q[:, 6:]
    matching = kmap._matched(kmap.deformed(s, MASS)).energy
    gap = kmap._joint_gap(s) - kmap.plastic_gap
    joints = (kmap.joint_masses[..., None] * gap * gap).sum((1, 2))
    wall = kmap.wall_mass * kmap.wall_radius**2 * ((s * s).sum(1) / kmap.wall_radius**2) ** 3
    omega2, joint_omega2 = (2 * np.pi * 0.2) ** 2, (2 * np.pi * 2.0) ** 2
    assert float(joints) > 0 and float(matching) > 0
    torch.testing.assert_close(soft.potential(q), 0.5 * omega2 * (matching + wall) + 0.5 * joint_omega2 * joints)
    torch.testing.assert_close(soft.potential_gradient(q), torch.func.grad(lambda qq: soft.potential(qq).sum())(q))


def test_an_articulated_body_s_mass_points_are_condensed_part_by_part():
    """Condensed per part, the points keep each part's mass and moments: the same potential, gradient,
    Hessian and mass matrix as the samples."""
    condensed, sampled = (make_body("quadratic", 300, condense, hinged=True)[0] for condense in (True, False))
    assert condensed.mass_points.shape[1] < sampled.mass_points.shape[1]
    generator = torch.Generator().manual_seed(4)
    for _ in range(2):
        q = sampled.rest_coordinates() + 0.5 * torch.randn(1, 9, generator=generator, dtype=torch.float64)
        for name in ("potential", "potential_gradient", "potential_hessian"):
            torch.testing.assert_close(getattr(condensed, name)(q), getattr(sampled, name)(q), rtol=1e-9, atol=1e-12)
        terms = [m.mass_terms(q, q) for m in (condensed, sampled)]
        torch.testing.assert_close(terms[0].mass_matrix, terms[1].mass_matrix, rtol=1e-9, atol=1e-12)


def wobble(expansion, hinged=False):
    """A body on its learned coordinates in free space, set wobbling: (map, system, q0, q_dot0)."""
    kmap, _ = make_body(expansion, hinged=hinged)
    system = LagrangianSystem(kmap, Environment(gravity=torch.zeros(3, dtype=torch.float64)))
    q0 = kmap.rest_coordinates()
    q_dot0 = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 1.5]], dtype=torch.float64)
    return kmap, system, q0, q_dot0


@pytest.mark.parametrize("hinged", [False, True], ids=["box", "hinged"])
def test_past_the_yield_strain_the_rest_shape_flows_and_the_energy_balance_closes(hinged):
    """A Prandtl element per body: springs in series with a slider. A wobble strained past e_y leaves
    the body in a new rest shape, the springs never hold more than the yield energy, and the energy the
    slider took is booked as dissipated. On the quadratic expansion only: the flow is the same code for
    both, the exact decoder's energy is checked above, and with it this test took 3 of the suite's 18
    minutes (2 CPU cores). The hinged body's springs are its parts' shape matching and its joints."""
    kmap, system, q0, q_dot0 = wobble("quadratic", hinged)
    elastic = rollout(system, q0, q_dot0, 6, 24.0, "rk4", kmap.mass_points, substeps=8)
    peak = max(float(kmap.strain(torch.as_tensor(s))) for s in elastic.coordinates[:, :, 6:])
    assert np.abs(elastic.pose["plastic_rest"]).max() == 0.0 and elastic.energy["dissipated"][-1, 0] == 0.0

    kmap.yield_strain = 0.3 * peak
    plastic = rollout(system, q0, q_dot0, 6, 24.0, "rk4", kmap.mass_points, substeps=8)
    rest = plastic.pose["plastic_rest"][-1]
    assert np.abs(rest).max() > 0.1 * np.abs(elastic.coordinates[:, 0, 6:]).max()  # it kept a new shape
    mass, gyration = float(kmap.masses.sum()), float(kmap.gyration)
    yield_energy = 0.5 * kmap.omega2 * mass * (kmap.yield_strain * gyration) ** 2
    # the springs hold at most the yield energy (plus the wall, tiny this far inside it)
    assert plastic.energy["potential"][:, 0].max() < 1.1 * yield_energy < 0.5 * elastic.energy["potential"][:, 0].max()
    dissipated = plastic.energy["dissipated"][-1, 0]
    assert dissipated > 0.1 * elastic.energy["kinetic"][0, 0]
    # the books close up to rk4's error, as for the elastic wobble (measured below 1e-4 of the total)
    assert np.abs(plastic.energy["balance"][:, 0]).max() < 1e-4 * plastic.energy["total"][0, 0]


@pytest.mark.parametrize("hinged", [False, True], ids=["box", "hinged"])
def test_the_plastic_return_lands_on_the_yield_surface_and_releases_the_springs_energy(hinged):
    kmap, _ = make_body("quadratic", hinged=hinged)
    kmap.yield_strain = 1e-3
    q = kmap.rest_coordinates() + torch.tensor([[0.0] * 6 + [0.8, -0.6, 0.5]], dtype=torch.float64)
    before = kmap.potential(q)
    released = kmap.flow(q)
    torch.testing.assert_close(kmap.strain(q[:, 6:]), torch.tensor([1e-3], dtype=torch.float64), rtol=1e-5, atol=0)
    torch.testing.assert_close(released, before - kmap.potential(q))


def test_a_redone_frame_starts_from_the_plastic_rest_it_was_given():
    """The first attempt at frame 2 flows on its way, then goes non-finite at its last step (injected);
    the redone frame must start from the plastic rest frame 1 ended with, or the springs' energy jumps
    unbooked."""
    kmap, system, q0, q_dot0 = wobble("quadratic")
    kmap.yield_strain = 0.3 * float(kmap.strain(q_dot0[:, 6:] / 24.0))  # yields within the first frame
    accelerate, calls = system.acceleration, []

    def failing_once(q, q_dot):
        calls.append(None)
        q_ddot, load_power, dissipated_power = accelerate(q, q_dot)
        return q_ddot * (torch.nan if len(calls) == 64 else 1.0), load_power, dissipated_power  # frame 2's last stage

    system.acceleration = failing_once
    trajectory = rollout(system, q0, q_dot0, 4, 24.0, "rk4", kmap.mass_points, substeps=8)
    assert trajectory.refined_frames == 1 and np.abs(trajectory.pose["plastic_rest"][1]).max() > 0
    assert np.abs(trajectory.energy["balance"][:, 0]).max() < 1e-4 * trajectory.energy["total"][0, 0]


def test_point_sets_are_known_by_name(body):
    """A name attached again with other points is prepared again (the skinning follows the new
    points, whatever memory they live in), and a name never attached is refused."""
    kmap, _ = body
    q = kmap.rest_coordinates()
    q[:, 6:] = 0.5
    moved = []
    for offset in (0.0, 0.05):
        points = kmap.mass_points[:, :5] + offset
        kmap.attach("probe", points)
        kmap.attach(f"fresh {offset}", points.clone())
        moved.append(kmap.embed(q, "probe"))
        torch.testing.assert_close(moved[-1], kmap.embed(q, f"fresh {offset}"), rtol=0, atol=1e-12)
    assert (moved[1] - moved[0]).abs().max() > 0.01
    with pytest.raises(KeyError, match="never-attached"):
        kmap.embed(q, "never-attached")


def test_condensed_mass_points_carry_the_same_dynamics():
    """The condensed mass points (fewer, not on the body) give the same mass matrix, forces, energies
    and potential as the samples they replace, at any state, on the ground and in the air."""
    (condensed, vertices), (sampled, _) = (make_body("quadratic", 300, condense) for condense in (True, False))
    maps = [condensed, sampled]
    assert maps[0].mass_points.shape[1] < 100 < maps[1].mass_points.shape[1]
    env = Environment(gravity=torch.tensor([0.0, -3.0, -9.81], dtype=torch.float64),
                      ground_height=torch.tensor([0.55], dtype=torch.float64), damping=2.0, drag=0.3,
                      contact_points=torch.as_tensor(vertices, dtype=torch.float64)[None],
                      contact_mass=torch.full((1, 8), 0.25, dtype=torch.float64))
    systems = [LagrangianSystem(kmap, env) for kmap in maps]
    generator = torch.Generator().manual_seed(3)
    for _ in range(3):
        q = maps[1].rest_coordinates() + 0.3 * torch.randn(1, 9, generator=generator, dtype=torch.float64)
        q_dot = torch.randn(1, 9, generator=generator, dtype=torch.float64)
        for system in systems:
            system.set_interval(0.0, 0.01)
        (a0, *powers0), (a1, *powers1) = (system.acceleration(q, q_dot) for system in systems)
        torch.testing.assert_close(a0, a1, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(torch.stack(powers0), torch.stack(powers1), rtol=1e-9, atol=1e-12)
        e0, e1 = (system.energies(q, q_dot) for system in systems)
        for key in e0:
            torch.testing.assert_close(e0[key], e1[key], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(systems[0].mass_matrix(q), systems[1].mass_matrix(q), rtol=1e-10, atol=1e-12)
        assert float(maps[0].strain(q[:, 6:])) == pytest.approx(float(maps[1].strain(q[:, 6:])), rel=1e-10)


def test_a_stack_of_bodies_gives_each_body_its_own_dynamics():
    """NeuralBodyStack: two bodies of one shape (one moved, on another material that yields) and one
    of another shape (other mass points), each turned by its own R_ref, give, row by row, what each
    body's map gives alone: mass terms, the potential with its gradient and Hessian, the plastic flow,
    the Jacobian of a point set (all its points, and some of them), a drawn set's positions and its
    Jacobian at some of them."""
    first, _ = make_body("quadratic")
    moved = first.with_material(3.0, 1e-3, shift=(1.0, 0.5, 0.0))
    other, _ = make_body("quadratic", count=24)
    maps = [first, moved, other]
    stack = NeuralBodyStack(maps)
    torch.manual_seed(2)
    stack.orientation = exp_so3(0.7 * torch.randn(3, 3, dtype=torch.float64))  # each row's R_ref, as each map's
    for row, m in enumerate(maps):
        m.orientation = stack.orientation[row:row + 1]
    q = stack.rest_coordinates() + 0.5 * torch.randn(3, stack.n_dof, dtype=torch.float64)
    q_dot = torch.randn_like(q)
    rest = torch.cat([m.mass_points[:, :6] for m in maps])
    stack.attach("probe", rest)
    stack.attach("drawn", rest, output=True)
    index = torch.tensor([[5, 0], [1, 1], [3, 2]])
    together = (stack.mass_terms(q, q_dot), stack.potential(q), stack.potential_gradient(q), stack.potential_hessian(q),
                stack.jacobian(q, "probe"), stack.jacobian(q, "probe", index), stack.embed(q, "drawn"),
                stack.jacobian(q, "drawn", index), stack.flow(q))
    for row, m in enumerate(maps):
        mine, mine_dot = q[row:row + 1], q_dot[row:row + 1]
        alone = (m.mass_terms(mine, mine_dot), m.potential(mine), m.potential_gradient(mine), m.potential_hessian(mine),
                 m.jacobian(mine, "probe"), m.jacobian(mine, "probe", index[row:row + 1]), m.embed(mine, "drawn"),
                 m.jacobian(mine, "drawn", index[row:row + 1]), m.flow(mine))
        for a, b in zip(together, alone):
            for x, y in zip(_tensors(a), _tensors(b)):
                torch.testing.assert_close(x[row:row + 1], y, rtol=1e-10, atol=1e-12)
    assert float(together[-1][1]) > 0 and float(together[-1][0]) == 0.0  # only the second yields
    torch.testing.assert_close(stack.plastic_rest[1:2], moved.plastic_rest, rtol=1e-10, atol=1e-12)


def _tensors(value):
    """A tensor, a tuple of them or a dataclass of them (MassTerms) as a list."""
    if torch.is_tensor(value):
        return [value]
    return list(value) if isinstance(value, tuple) else list(vars(value).values())
