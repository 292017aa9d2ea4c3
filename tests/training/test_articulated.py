"""The articulated reference simulator (MuJoCo) on the procedural objects: physical checks, determinism."""

import numpy as np
import pytest

from neurok_blender.core import Conditions, Force, Pull
from training.reference.articulated import ArticulatedMaterial, simulate_articulated
from training.shapes.articulated import BUILDERS, ArticulatedObject

G = 9.81


def lifted(name, seed, height=0.3):
    obj = BUILDERS[name](np.random.default_rng(seed))
    return obj.moved(np.eye(3), [0.0, 0.0, height - min(v[:, 2].min() for v, _ in obj.parts)])


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_object_falls_lands_and_keeps_its_joints(name):
    obj = lifted(name, seed=3)
    run = simulate_articulated(obj, conditions=Conditions(frames=48, ground_height=0.0, velocity=(0.5, 0.0, 0.0),
                                                          angular_velocity=(0.0, 1.0, 2.0)))
    vertices, _, part_ids = obj.mesh()
    assert run.positions.shape == (48, len(vertices), 3) and np.isfinite(run.positions).all()
    assert run.positions[..., 2].min() > -0.005  # ground penetration under 5 mm
    assert run.pivot_gap < 1e-6
    # no loads: energy does not rise, but for what the soft contacts and joint limits store while pressed
    # and give back (measured: up to 1.1 % of the start for a figure landing with its limbs on their limits)
    assert np.diff(run.energy).max() < 2e-2 * run.energy[0]
    for part in np.unique(part_ids):  # every part stays rigid
        p = run.positions[:, part_ids == part].astype(np.float64)
        d = np.linalg.norm(p[:, :, None] - p[:, None], axis=-1)
        assert np.abs(d - d[:1]).max() < 1e-5
    lo = np.array([j.limits[0] for j in obj.joints if j.kind != "fixed"])
    hi = np.array([j.limits[1] for j in obj.joints if j.kind != "fixed"])
    assert (run.joint_angles >= lo - 0.05).all() and (run.joint_angles <= hi + 0.05).all()


def test_free_fall_of_the_centre_of_mass_is_ballistic():
    obj = lifted("chain", seed=1, height=5.0)
    cond = Conditions(frames=25, gravity=(0.0, 0.0, -G), velocity=(1.0, -0.5, 2.0), angular_velocity=(3.0, 0.0, 1.0))
    run = simulate_articulated(obj, ArticulatedMaterial(joint_damping=0.0), cond)
    center = centre_of_mass(obj, run.positions)
    t = np.arange(25) / 24
    expected = center[0] + np.outer(t, cond.velocity) + 0.5 * np.outer(t * t, cond.gravity)
    np.testing.assert_allclose(center, expected, atol=2e-4)


def centre_of_mass(obj, positions):
    """Box parts of uniform density: each part's vertex mean is its centre, weighted by its volume."""
    _, _, part_ids = obj.mesh()
    volumes = np.array([abs(np.einsum("fi,fi->", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]]))) / 6 for v, f in obj.parts])
    weights = volumes[part_ids] / np.bincount(part_ids)[part_ids]
    return (weights[:, None] * positions.astype(np.float64)).sum(1) / weights.sum()


def test_a_push_changes_momentum_by_its_impulse():
    """2 N on the lid's top corner for frames [0, 4) of a floating 1 kg laptop: the centre of mass
    moves as F/M (dt^2 / 2 + dt (T - dt)), whatever the lid and base do about it."""
    obj = lifted("laptop", seed=0, height=1.0)
    vertices, _, part_ids = obj.mesh()
    lid_corner = vertices[part_ids == 1][np.argmax(vertices[part_ids == 1, 2])]
    push = Force((0.0, 2.0, 0.0), point=tuple(lid_corner), start_frame=0, end_frame=4)
    run = simulate_articulated(obj, conditions=Conditions(frames=7, gravity=(0, 0, 0), mass=1.0, forces=[push]))
    dt, total = 4 / 24, 6 / 24
    moved = centre_of_mass(obj, run.positions)[-1] - centre_of_mass(obj, run.positions)[0]
    np.testing.assert_allclose(moved, [0.0, 2.0 * (dt**2 / 2 + dt * (total - dt)), 0.0], atol=2e-5)
    lid_turn = run.joint_angles[-1, 0] - run.joint_angles[0, 0]
    assert abs(lid_turn) > 0.01  # and the push at the lid's edge swings the lid about its hinge


def test_same_input_same_result():
    runs = [simulate_articulated(lifted("assembly", seed=7), conditions=Conditions(frames=24, ground_height=0.0))
            for _ in range(2)]
    assert np.array_equal(runs[0].positions, runs[1].positions)


@pytest.mark.parametrize("name", ["laptop", "chain", "door", "eyeglasses", "scissors", "figure"])
def test_swept_hinge_ranges_keep_parts_out_of_each_other(name):
    from training.corpus.articulated import _part_overlap

    obj = lifted(name, seed=2, height=0.5)
    run = simulate_articulated(obj, conditions=Conditions(frames=36, ground_height=0.0, angular_velocity=(2.0, 3.0, 1.0)))
    assert _part_overlap(obj, run.positions) < 0.005


def test_a_pulled_lid_turns_its_hinge_to_the_handle_target_with_the_base_held():
    obj = BUILDERS["laptop"](np.random.default_rng(0))
    vertices, _, parts = obj.mesh()
    lid = np.flatnonzero(parts == parts.max())
    handle = int(lid[np.argmax(vertices[lid, 2])])
    hinge = obj.joints[0]
    arm = vertices[handle] - hinge.anchor
    turn = 0.3  # rad about the hinge (Rodrigues): a target the joint can reach
    k = hinge.axis
    target = hinge.anchor + arm * np.cos(turn) + np.cross(k, arm) * np.sin(turn) + k * (k @ arm) * (1 - np.cos(turn))
    pulled = simulate_articulated(obj, conditions=Conditions(frames=3, pull=Pull([handle], tuple(target - vertices[handle]))))
    moved = pulled.positions[0] - vertices
    assert np.linalg.norm(pulled.positions[0, handle] - target) < 0.002
    assert np.abs(moved[parts == 0]).max() < 0.002  # the anchor part stays
    assert abs(abs(pulled.joint_angles[0, 0]) - turn) < 0.01
    # a push along the hinge axis cannot be reached: the pose stays put and says how far it missed
    sideways = simulate_articulated(obj, conditions=Conditions(frames=2, pull=Pull([handle], tuple(0.05 * k))))
    assert sideways.hold_gap > 0.04
    with pytest.raises(ValueError, match="single rigid part"):
        simulate_articulated(ArticulatedObject("one part", obj.parts[:1]), conditions=Conditions(frames=2, pull=Pull([0], (0.0, 0.0, 0.1))))


def test_strong_joint_damping_on_slim_links_stays_stable():
    # a folding rule with 1.3 N m s/rad hinges blew up at MuJoCo's 1 ms RK4 step (MuJoCo then resets
    # the state silently); the step now shrinks to what the damping allows
    obj = BUILDERS["chain"](np.random.default_rng(3))
    cond = Conditions(frames=12, mass=4.3, ground_height=None, angular_velocity=(-1.4, -1.3, -0.2))
    run = simulate_articulated(obj, ArticulatedMaterial(joint_damping=1.3), cond)
    assert np.isfinite(run.positions).all()
    assert np.all(np.diff(run.energy) <= 1e-6 * abs(run.energy).max())  # damping only removes energy


def test_ground_friction_is_the_same_in_every_direction():
    """A chain slid flat along x and along the diagonal slows at mu g both ways (Coulomb's cone is round;
    MuJoCo's default pyramid gave 0.30 g and 0.21 g)."""
    obj = lifted("chain", seed=0, height=0.0)
    decelerations = []
    for angle in (0.0, np.pi / 4):
        start = Conditions(frames=8, ground_height=0.0, velocity=(np.cos(angle), np.sin(angle), 0.0))
        run = simulate_articulated(obj, ArticulatedMaterial(friction=0.3), start)
        speed = np.linalg.norm(np.diff(centre_of_mass(obj, run.positions)[:, :2], axis=0), axis=1) * 24
        decelerations.append((speed[1] - speed[6]) * 24 / 5)
    np.testing.assert_allclose(decelerations, 0.3 * G, rtol=0.03)
