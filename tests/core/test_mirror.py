"""Mirror planes: a symmetric body dropped flat stays symmetric, whatever its decoder's modes look like.

The random decoder below is as lopsided as any: without its mirrored coordinates a flat box drifts
and turns as it lands (checked here too, so the symmetric result is not an accident of the model).
"""

import dataclasses

import numpy as np
import pytest
import torch

from neurok_blender.core import Conditions, LagrangianSystem, rollout
from neurok_blender.core.articulation import find_joints
from neurok_blender.core.mass_points import material_points
from neurok_blender.core.mesh import box_mesh, contact_samples, mass_properties
from neurok_blender.core.mirror import MirrorGroup, find_mirrors
from neurok_blender.core.model import ModelConfig, NeuROKModel, prepare_shape, shape_tensors
from neurok_blender.core.neural import NeuralBodyMap
from neurok_blender.core.reduction import active_subspace
from neurok_blender.core.rotation import exp_so3
from neurok_blender.core.simulation import DTYPE, contact_points, environment, output_points
from neurok_blender.core.trajectory import OUTPUT

from shapes import hinged_boxes

TINY = ModelConfig(width=32, heads=2, tokens=8, channels=4, encoder_depth=1, decoder_depth=1, frequencies=4,
                   encoder_points=128, queries=32)
BOX = box_mesh((0.4, 0.3, 0.2), corner=(0.1, -0.35, 0.03))  # off the origin: the planes go through its centre
POINTS = 128  # mass points: enough for the moments, few for speed
FREQUENCY = 6.0  # Hz: the landing bends the box well inside the wall (at 2 Hz it reached the wall, |s| = 5, where
# the symmetric motion is unstable: rounding grew 400-fold a frame, to 4e-8 m by frame 10)


def tilted(vertices, rotation=(0.2, 0.15, 0.5)):
    """The vertices turned about their centroid, lowest point where it was: no vertical mirror plane left."""
    turn = exp_so3(torch.tensor([rotation], dtype=torch.float64))[0].numpy()
    turned = (vertices - vertices.mean(0)) @ turn.T + vertices.mean(0)
    return turned + np.array([0.0, 0.0, vertices[:, 2].min() - turned[:, 2].min()])


LOPSIDED = (tilted(BOX[0]), BOX[1])


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    network = NeuROKModel(TINY)
    with torch.no_grad():  # a decoder that really deforms
        network.head[-1].weight.mul_(30.0)
    return network.eval()


def body_map(model, vertices, faces, mirrors, expansion="quadratic", mass=1.0, joints=None):
    """The learned map as ``NeuROK.body`` builds it, with the given mirror group (None: none) and, for
    an articulated body, its ``joints``."""
    shape = prepare_shape(vertices, faces, TINY)
    with torch.no_grad():
        features, query_features, _ = shape_tensors(model, shape)
        prior_mean, tokens = model.prior(features)
    subspace = active_subspace(model, prior_mean, tokens, query_features, coordinates=3)
    points, masses, _, parts = material_points(vertices, faces, mass, count=POINTS, mirrors=mirrors)
    return NeuralBodyMap(model, shape, subspace, points, masses, FREQUENCY, DTYPE, expansion, mirrors=mirrors,
                         joints=joints, mass_parts=parts)


def drop(model, vertices, faces, mirrors, frames=10):
    """A flat drop onto the ground at z = 0, no push, no spin: (map, trajectory with the vertices drawn)."""
    conditions = Conditions(frames=frames, category="elastic", ground_height=0.0)
    kmap = body_map(model, vertices, faces, mirrors)
    env = dataclasses.replace(environment(conditions, vertices, faces), damping=0.5)
    system = LagrangianSystem(kmap, env)
    out = output_points(vertices)
    kmap.attach(OUTPUT, out, parts=kmap.shape.vertex_parts, output=True)
    trajectory = rollout(system, kmap.rest_coordinates(), torch.zeros(1, kmap.n_dof, dtype=DTYPE), conditions.frames,
                         conditions.fps, conditions.integrator, output_points=out, substeps=conditions.substeps)
    return kmap, trajectory


def test_a_box_has_four_mirrors_a_prism_two_and_a_tilted_box_one():
    v, _ = BOX
    group = find_mirrors(v)
    assert group.size == 4
    np.testing.assert_array_equal(group.signs[0], np.ones(3))  # the identity first
    assert {tuple(g) for g in group.signs} == {(1, 1, 1), (-1, 1, 1), (1, -1, 1), (-1, -1, 1)}
    np.testing.assert_allclose(group.center, (v.min(0) + v.max(0)) / 2)
    assert find_mirrors(LOPSIDED[0]).size == 1
    triangle = np.array([[0.0, 0.0], [1.0, 0.0], [0.2, 0.7]])  # in the y-z plane, lopsided in y
    prism = np.concatenate([np.column_stack([np.full(3, x), triangle]) for x in (-0.5, 0.5)])
    assert [tuple(g) for g in find_mirrors(prism).signs] == [(1, 1, 1), (-1, 1, 1)]
    assert find_mirrors(v + np.array([0.0, 0.0, 1e-3]) * (v[:, :1] > 0.2)).size == 2  # one side sheared up


def assert_mirror_closed(points, masses, group):
    """Every g maps the points onto themselves, each onto one of the same mass."""
    for index in range(group.size):
        distance = np.linalg.norm(group.reflect(points, index)[:, None] - points[None], axis=-1)
        nearest = distance.argmin(1)
        assert distance.min(1).max() < 1e-12
        np.testing.assert_allclose(masses[nearest], masses, rtol=1e-9)


def test_symmetric_mass_points_are_their_own_mirror_images_and_keep_mass_centre_and_inertia():
    v, f = BOX
    group = find_mirrors(v)
    points, masses, where, _ = material_points(v, f, 2.0, mirrors=group)
    assert where == "volume" and (masses > 0).all()
    assert_mirror_closed(points, masses, group)
    plain = material_points(v, f, 2.0)[0]
    assert 0.7 * len(plain) < len(points) < 1.3 * len(plain)  # about as many: count / |G| samples, |G| images
    target = mass_properties(v, f, 2.0)
    center = (masses[:, None] * points).sum(0) / masses.sum()
    np.testing.assert_allclose(masses.sum(), 2.0, rtol=1e-6)  # mass_points.MOMENT_TOLERANCE
    np.testing.assert_allclose(center, target.center, atol=1e-9)
    second = np.einsum("p,pi,pj->ij", masses, points - center, points - center)
    np.testing.assert_allclose(second, target.second_moment, atol=1e-6 * np.abs(target.second_moment).max())

    # two parts, each the other's mirror image across x: each keeps half the mass
    left = box_mesh((0.2, 0.3, 0.1), corner=(-0.5, -0.15, 0.0))
    right = (left[0] * np.array([-1.0, 1.0, 1.0]), left[1][:, ::-1])
    pair = np.concatenate([left[0], right[0]]), np.concatenate([left[1], right[1] + len(left[0])])
    group = find_mirrors(pair[0])
    assert group.size == 4
    points, masses, _, _ = material_points(*pair, 2.0, mirrors=group)
    assert_mirror_closed(points, masses, group)
    np.testing.assert_allclose(masses[points[:, 0] < 0].sum(), 1.0, rtol=1e-6)

    # a body without mirror planes: the points of old, bit for bit
    for a, b in zip(material_points(*LOPSIDED, 2.0, mirrors=find_mirrors(LOPSIDED[0])), material_points(*LOPSIDED, 2.0)):
        np.testing.assert_array_equal(a, b)


def test_contact_points_of_a_symmetric_mesh_are_their_own_mirror_images_and_press_on_its_middle():
    """The 128 points chosen alone lie lopsided on a finely meshed box (its bottom face's off its
    middle by millimetres); a quarter of them and their images are centred, so whatever the box rests
    on or carries is pressed evenly."""
    steps = np.linspace(0.0, 1.0, 11)
    grid = np.array([(a, b, c) for a in steps for b in steps for c in steps])
    vertices = grid[(np.abs(grid - 0.5) > 0.5 - 1e-9).any(1)] * [0.4, 0.3, 0.2] + [0.1, -0.35, 0.03]  # the surface
    group = find_mirrors(vertices)
    assert group.size == 4
    picked = contact_points(vertices)
    assert len(picked) <= 128 and len(np.unique(picked)) == len(picked)
    for images in group.vertex_images(vertices)[:, picked]:
        assert set(images) == set(picked)
    middle = (vertices.min(0) + vertices.max(0))[:2] / 2
    def bottom_offset(indices):
        points = vertices[indices]
        return np.abs(points[points[:, 2] < 0.03 + 1e-9, :2].mean(0) - middle).max()
    assert bottom_offset(picked) < 1e-12
    assert bottom_offset(contact_samples(vertices)) > 1e-3  # chosen alone
    np.testing.assert_array_equal(contact_points(LOPSIDED[0]), np.sort(contact_samples(LOPSIDED[0])))


@pytest.mark.parametrize("expansion", ["quadratic", "exact", "drawn"])
def test_the_mirrored_deformation_is_mirror_equivariant(model, expansion):
    """y(s) at g(x) is g(y(s') at x), s' the blocks permuted by g: s'_h = s_{h g}, for every g in G,
    at the engine's points (quadratic field), at drawn points (skinning) and on the network (exact).
    The quadratic fields come from finite differences (core/taylor.py), whose rounding, about
    eps / STEP^2 of the displacement, differs between a point and its reflection, computed a few ulps
    apart: equal within 1e-9 m there (2.5e-10 measured), within 1e-12 m on the network."""
    v, f = BOX
    group = find_mirrors(v)
    kmap = body_map(model, v, f, group, "exact" if expansion == "exact" else "quadratic")
    assert kmap.reduced_size == 3 * group.size
    points = torch.as_tensor(np.random.default_rng(2).uniform(-0.1, 0.1, (50, 3)) + group.center)[None]
    s = torch.as_tensor(np.random.default_rng(3).normal(size=(1, kmap.reduced_size)))
    center = torch.as_tensor(group.center)
    signs = [tuple(g) for g in group.signs]
    kmap.attach("points", points, output=expansion == "drawn")
    for index in range(group.size):
        images = group.reflect(points, index)
        kmap.attach("images", images, output=expansion == "drawn")
        permuted = torch.cat([s[:, 3 * signs.index(tuple(h * group.signs[index])):][:, :3] for h in group.signs], 1)
        with torch.no_grad():
            at_images = kmap.deformed(s, "images")
            mirrored = center + (kmap.deformed(permuted, "points") - center) * torch.as_tensor(group.signs[index])
        assert (at_images - images).abs().max() > 1e-3  # it deforms
        tolerance = {"drawn": 1e-7, "quadratic": 1e-9, "exact": 1e-12}[expansion]  # drawn: float32
        torch.testing.assert_close(at_images, mirrored, atol=tolerance, rtol=0)


def test_a_symmetric_hinged_body_s_joint_free_springs_are_symmetric(model):
    """A box with a lid hinged along its edge, symmetric across the plane through the hinge's middle:
    its joint points get their mirror images, between the reflected parts, so the articulated
    potential (articulation.py) is the same at s and at s' (the blocks permuted by g), and its
    gradient is the permuted one."""
    v, f, parts = hinged_boxes()
    group = find_mirrors(v)
    assert group.size == 2
    kmap = body_map(model, v, f, group, joints=find_joints(v, f, parts))
    k = kmap.block
    assert kmap.reduced_size == 2 * k and kmap.joint_masses.shape[1] > 2
    generator = np.random.default_rng(4)
    q = kmap.rest_coordinates().clone()
    q[0, 6:] = torch.as_tensor(generator.normal(size=2 * k))
    swapped = q.clone()
    swapped[0, 6:] = torch.cat([q[0, 6 + k:], q[0, 6:6 + k]])
    assert float(kmap.potential(q)) > 0
    torch.testing.assert_close(kmap.potential(swapped), kmap.potential(q), rtol=1e-9, atol=0)
    gradient, mirrored = kmap.potential_gradient(q)[0, 6:], kmap.potential_gradient(swapped)[0, 6:]
    torch.testing.assert_close(torch.cat([mirrored[k:], mirrored[:k]]), gradient, rtol=1e-8, atol=1e-12)


def test_a_box_dropped_flat_lands_without_drifting_or_turning(model):
    """On mirrored coordinates the centre of mass stays on the planes' axis and the box does not turn,
    to rounding (about 1e-9 off the axis and 4e-8 of a turn with one thread: the implicit step solves
    the stiff contact and friction, stiff at zero slip, which amplify it), against
    the 4 mm and 0.008 the same box drifts and turns on the
    decoder's own lopsided modes. Nine frames: the tenth passes through a stiff moment whose
    integration picks up the rounding's asymmetry (measured 1e-3 of a turn with one thread, 1e-15
    with two), which bit-symmetric sums hid before the mass points were condensed."""
    v, f = BOX
    group = find_mirrors(v)
    kmap, trajectory = drop(model, v, f, group, frames=9)
    translation, rotation = trajectory.pose["translation"][:, 0], trajectory.pose["rotation"][:, 0]
    assert translation[:, 2].min() < v[:, 2].mean() - 0.04  # it came down (3 cm to the ground) ...
    assert np.abs(trajectory.coordinates[:, 0, 6:]).max() > 0.05  # ... and the landing deformed it
    np.testing.assert_allclose(translation[:, :2], np.broadcast_to(group.center[:2], translation[:, :2].shape),
                               atol=1e-8, rtol=0)  # the centre of mass on the planes' vertical axis
    np.testing.assert_allclose(rotation, np.broadcast_to(np.eye(3), rotation.shape), atol=1e-7, rtol=0)
    drawn = trajectory.points[:, 0].astype(np.float64)
    for index, image in enumerate(group.vertex_images(v)):  # the drawn box stays its own mirror image
        np.testing.assert_allclose(group.reflect(drawn, index), drawn[:, image], atol=1e-5, rtol=0)

    # the same box on the decoder's own (lopsided) modes drifts and turns
    _, plain = drop(model, v, f, None, frames=9)
    drift = np.abs(plain.pose["translation"][:, 0, :2] - plain.pose["translation"][0, 0, :2]).max()
    turn = np.abs(plain.pose["rotation"][:, 0] - np.eye(3)).max()
    assert drift > 1e-3 and turn > 1e-3


def test_a_body_without_mirror_planes_moves_as_before(model):
    group = find_mirrors(LOPSIDED[0])
    assert group.size == 1
    _, found = drop(model, *LOPSIDED, group, frames=6)
    _, plain = drop(model, *LOPSIDED, None, frames=6)
    _, identity = drop(model, *LOPSIDED, MirrorGroup.identity(), frames=6)
    for other in (plain, identity):
        np.testing.assert_array_equal(found.points, other.points)
        np.testing.assert_array_equal(found.coordinates, other.coordinates)
