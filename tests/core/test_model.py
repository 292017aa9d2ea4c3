"""The NeuROK network: shapes, determinism, derivatives, learning, parts and checkpoints."""

import warnings

import numpy as np
import pytest
import torch

from neurok_blender.core import skinning as skinning_module
from neurok_blender.core.checkpoint import load_model, resolve_device, save_checkpoint
from neurok_blender.core.fitting import chamfer_l1, fit_pose, latent_decoder
from neurok_blender.core.mesh import box_mesh
from neurok_blender.core.model import ModelConfig, NeuROKModel, prepare_shape, shape_tensors
from neurok_blender.core.reduction import active_subspace
from neurok_blender.core.rotation import exp_so3
from neurok_blender.core.skinning import deform, skinning
from neurok_blender.core.surface import sample_surface

TINY = ModelConfig(width=32, heads=2, tokens=8, channels=4, encoder_depth=1, decoder_depth=1, frequencies=4,
                   encoder_points=128, queries=32)


def slab(n=6):
    """A 1 x 0.3 x 0.1 box with a grid of vertices on top and bottom (so it can bend)."""
    x, y = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 0.3, 3))
    top = np.stack([x.ravel(), y.ravel(), np.full(x.size, 0.1)], 1)
    vertices = np.concatenate([top, top * [1, 1, 0]])
    index = np.arange(x.size).reshape(3, n)
    quads = [(index[i, j], index[i, j + 1], index[i + 1, j + 1], index[i + 1, j]) for i in range(2) for j in range(n - 1)]
    faces = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
    faces = np.array(faces)
    return vertices, np.concatenate([faces, faces[:, ::-1] + x.size])  # top and bottom sheets


def test_forward_shapes_dtypes_and_a_start_near_no_deformation():
    torch.manual_seed(0)
    model = NeuROKModel(TINY)
    shape = prepare_shape(*box_mesh((1.0, 0.5, 0.2)), TINY)
    features, query_features, queries = shape_tensors(model, shape)
    prior_mean, tokens = model.prior(features)
    assert prior_mean.shape == (8, 4) and tokens.shape == (8, 32) and prior_mean.dtype == torch.float32
    mean, log_variance = model.posterior(features, torch.zeros(len(features), 3))
    assert mean.shape == log_variance.shape == (8, 4)
    rotation, displacement = model.motions(prior_mean, tokens, query_features)
    assert rotation.shape == displacement.shape == (len(queries), 3)
    points = torch.as_tensor(shape.vertices, dtype=torch.float32)
    moved = model.deform(prior_mean + torch.randn(8, 4), tokens, query_features, queries, points, shape.skin)
    assert moved.shape == (8, 3) and (moved - points).abs().max() < 0.05  # initialised near the identity


def test_same_seed_same_samples_and_same_network():
    a, b = (prepare_shape(*box_mesh(), TINY, seed=3) for _ in range(2))
    assert np.array_equal(a.samples.points, b.samples.points) and np.array_equal(a.queries.points, b.queries.points)
    outputs = []
    for _ in range(2):
        torch.manual_seed(1)
        model = NeuROKModel(TINY)
        features, _, _ = shape_tensors(model, a)
        outputs.append(model.prior(features)[0])
    assert torch.equal(*outputs)


def test_decoder_jacobian_matches_finite_differences_in_forward_mode():
    torch.manual_seed(0)
    model = NeuROKModel(TINY).double()
    with torch.no_grad():  # a decoder far from the identity, so the derivative is not trivial
        model.head[-1].weight.mul_(100.0)
    shape = prepare_shape(*box_mesh(), TINY)
    features, query_features, queries = shape_tensors(model, shape, dtype=torch.float64)
    _, tokens = model.prior(features)
    points = torch.as_tensor(shape.vertices)
    z = torch.randn(8, 4, dtype=torch.float64)

    def decode(flat):
        return model.deform(flat.view(8, 4), tokens, query_features, queries, points, shape.skin).reshape(-1)

    jacobian = torch.func.jacfwd(decode)(z.reshape(-1))
    h = 1e-6
    columns = [(decode(z.reshape(-1) + h * e) - decode(z.reshape(-1) - h * e)) / (2 * h) for e in torch.eye(32, dtype=torch.float64)]
    assert jacobian.abs().max() > 1e-3
    torch.testing.assert_close(jacobian, torch.stack(columns, 1), atol=1e-7, rtol=1e-5)


def test_decoder_second_forward_derivative_matches_finite_differences():
    """The engine's Coriolis terms are jvps of jvps: a wrong one (nn.LayerNorm's in torch 2.13) breaks
    energy conservation while every first derivative still checks out."""
    torch.manual_seed(0)
    model = NeuROKModel(TINY).double()
    with torch.no_grad():
        model.head[-1].weight.mul_(100.0)
    shape = prepare_shape(*box_mesh(), TINY)
    features, query_features, queries = shape_tensors(model, shape, dtype=torch.float64)
    _, tokens = model.prior(features)
    points = torch.as_tensor(shape.vertices)

    def decode(z):
        return model.deform(z, tokens, query_features, queries, points, shape.skin)

    def directional(z, a):
        return torch.func.jvp(decode, (z,), (a,))[1]

    z, a, b = (torch.randn(8, 4, dtype=torch.float64) for _ in range(3))
    nested = torch.func.jvp(lambda zz: directional(zz, a), (z,), (b,))[1]
    h = 1e-5
    finite = (directional(z + h * b, a) - directional(z - h * b, a)) / (2 * h)
    assert finite.abs().max() > 1e-2
    torch.testing.assert_close(nested, finite, atol=1e-7, rtol=1e-5)


def test_dual_quaternion_skinning_moves_rigidly_and_blends_one_motion_exactly():
    rng = np.random.default_rng(0)
    queries = torch.as_tensor(rng.normal(size=(6, 3)))
    rotation, displacement = torch.as_tensor(rng.normal(size=(6, 3))), torch.as_tensor(rng.normal(size=(6, 3)))
    near = queries + 0.01 * torch.as_tensor(rng.normal(size=(6, 3)))
    moved = deform(queries, rotation, displacement, near, skinning(near.numpy(), queries.numpy(), k=1))
    expected = queries + displacement + torch.einsum("qij,qj->qi", exp_so3(rotation), near - queries)
    torch.testing.assert_close(moved, expected)
    # every query carrying the same global motion x -> R x + tau: any blend of them is that motion
    turn, tau = exp_so3(torch.tensor([0.3, -1.2, 0.5], dtype=torch.float64)), torch.tensor([0.2, 0.0, -0.4], dtype=torch.float64)
    same_rotation = torch.tensor([0.3, -1.2, 0.5], dtype=torch.float64).expand(6, 3)
    points = torch.as_tensor(rng.normal(size=(40, 3)))
    blended = deform(queries, same_rotation, queries @ turn.T + tau - queries, points,
                     skinning(points.numpy(), queries.numpy(), k=4))
    torch.testing.assert_close(blended, points @ turn.T + tau)


def test_drawn_points_blend_block_by_block_to_the_same_positions(monkeypatch):
    """A skinning for points only drawn (``Skinning.drawn``) comes in blocks of rows, each blending by a
    sparse (rows, Q) product: together they cover every point once, in order, at the same positions as
    gathering each vertex's K queries, with dual quaternions and with displacements, to the rounding
    of the blocks' single precision (DRAWN_DTYPE)."""
    monkeypatch.setattr(skinning_module, "DRAWN_ROWS", 64)
    rng = np.random.default_rng(1)
    queries = torch.as_tensor(rng.normal(size=(12, 3)))
    rotation, displacement = (0.5 * torch.as_tensor(rng.normal(size=(2, 12, 3)))).unbind()
    points = torch.as_tensor(rng.normal(size=(200, 3)))
    skin = skinning(points.numpy(), queries.numpy(), k=4)
    blocks = skin.drawn(12)
    assert [(rows.start, rows.stop) for rows, _ in blocks] == [(0, 64), (64, 128), (128, 192), (192, 200)]
    for dual_quaternion in (True, False):
        drawn = torch.cat([deform(queries, rotation, displacement, points[rows], block, dual_quaternion)
                           for rows, block in blocks])
        torch.testing.assert_close(drawn, deform(queries, rotation, displacement, points, skin, dual_quaternion),
                                   rtol=1e-6, atol=1e-6)


def test_points_follow_query_points_of_their_own_part_only():
    a, fa = box_mesh((0.3, 0.3, 0.3))
    b, fb = box_mesh((0.3, 0.3, 0.3), corner=(0.31, 0.0, 0.0))  # 1 cm apart
    shape = prepare_shape(np.concatenate([a, b]), np.concatenate([fa, fb + 8]), TINY)
    assert set(shape.vertex_parts) == {0, 1}
    assert (shape.query_parts[shape.skin.index] == shape.vertex_parts[:, None]).all()
    with pytest.raises(ValueError, match="more than the model's"):
        prepare_shape(np.concatenate([a + [i, 0, 0] for i in range(40)]),
                      np.concatenate([fa + 8 * i for i in range(40)]), TINY)


def test_a_tiny_model_learns_a_bend_within_seconds():
    torch.manual_seed(0)
    vertices, faces = slab()
    bent = vertices.copy()
    bent[:, 2] += 0.3 * (vertices[:, 0] - 0.5) ** 2  # ends up: the target deformation
    shape = prepare_shape(vertices, faces, TINY)
    model = NeuROKModel(TINY)
    features, query_features, queries = shape_tensors(model, shape)
    samples = sample_surface(shape.vertices, faces, 64, np.random.default_rng(0))
    target = torch.as_tensor(samples.interpolate(shape.to_model(bent), faces), dtype=torch.float32)
    points = torch.as_tensor(samples.points, dtype=torch.float32)
    skin = skinning(samples.points, shape.queries.points, k=TINY.neighbours)
    deformation = torch.as_tensor(shape.samples.interpolate(shape.to_model(bent), faces) - shape.samples.points,
                                  dtype=torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), 5e-3)
    for step in range(60):
        mean, _ = model.posterior(features, deformation)
        _, tokens = model.prior(features)
        error = (model.deform(mean, tokens, query_features, queries, points, skin) - target).norm(dim=-1).mean()
        if step == 0:
            first = error.item()
        optimizer.zero_grad()
        error.backward()
        optimizer.step()
    assert error.item() < 0.2 * first  # measured: about 0.05 of the start


def test_checkpoints_round_trip_and_name_the_file_when_wrong(tmp_path):
    torch.manual_seed(0)
    model = NeuROKModel(TINY)
    path = tmp_path / "weights.pt"
    save_checkpoint(path, model, {"steps": 3})
    loaded = load_model(path, device="cpu")
    assert loaded.config == TINY
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name])
    with pytest.raises(ValueError, match="does not exist"):
        load_model(tmp_path / "missing.pt")
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="truncated.pt cannot be read"):
        load_model(truncated)
    other = tmp_path / "other.pt"
    torch.save({"format": "something else"}, other)
    with pytest.raises(ValueError, match="not a NeuROK checkpoint"):
        load_model(other)
    payload = torch.load(path, weights_only=True)
    for change, message in [(dict(version=99), "version 99"), (dict(config={**payload["config"], "wings": 2}), "newer"),
                            (dict(config={**payload["config"], "width": 64}), "does not fit")]:
        torch.save({**payload, **change}, other)
        with pytest.raises(ValueError, match=message):
            load_model(other)


def test_device_choice():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert resolve_device("cuda").type == "cpu"
        assert "not available" in str(caught[0].message)
    with pytest.raises(ValueError, match="auto, cpu or cuda"):
        resolve_device("tpu")


def test_the_active_subspace_finds_the_directions_that_move_the_shape():
    torch.manual_seed(0)
    model = NeuROKModel(TINY).double()
    with torch.no_grad():  # make the decoder read only latent channel 0 of each token
        model.latent_in.weight[:, 1:] = 0.0
        model.head[-1].weight.mul_(100.0)
    shape = prepare_shape(*box_mesh(), TINY)
    features, query_features, _ = shape_tensors(model, shape, dtype=torch.float64)
    prior_mean, tokens = model.prior(features)
    subspace = active_subspace(model, prior_mean, tokens, query_features, coordinates=4)
    assert subspace.basis.shape == (4, 8, 4)
    assert subspace.basis[..., 1:].abs().max() < 1e-9  # dead channels get no weight
    torch.testing.assert_close(torch.einsum("ilc,jlc->ij", subspace.basis, subspace.basis), torch.eye(4, dtype=torch.float64))
    assert (subspace.eigenvalues[8:].abs() < 1e-12 * subspace.eigenvalues[0]).all()  # only 8 live directions
    assert active_subspace(model, prior_mean, tokens, query_features).size <= 8
    torch.testing.assert_close(subspace.latent(prior_mean, torch.zeros(4, dtype=torch.float64)), prior_mean)


def test_pose_fitting_finds_a_moved_copy_of_the_shape():
    torch.manual_seed(0)
    model = NeuROKModel(TINY)
    shape = prepare_shape(*box_mesh((1.0, 0.6, 0.3)), TINY)
    features, query_features, queries = shape_tensors(model, shape)
    prior_mean, tokens = model.prior(features)
    points = torch.as_tensor(sample_surface(shape.vertices, shape.faces, 300, np.random.default_rng(0)).points,
                             dtype=torch.float32)
    skin = skinning(points.numpy(), shape.queries.points, k=TINY.neighbours)
    with torch.no_grad():
        rest = model.deform(prior_mean, tokens, query_features, queries, points, skin)
    turn = exp_so3(torch.tensor([0.0, 0.0, 0.3]))
    target = (rest - rest.mean(0)) @ turn.T + rest.mean(0) + torch.tensor([0.1, -0.05, 0.02])
    subspace = active_subspace(model, prior_mean.detach(), tokens.detach(), query_features, coordinates=2)
    decode = latent_decoder(model, prior_mean.detach(), tokens.detach(), query_features, queries, points, skin,
                            subspace)
    fit = fit_pose(decode, torch.zeros(subspace.size), target, steps=150)
    assert chamfer_l1(rest, target) > 0.05
    assert fit.chamfer < 0.01  # measured 0.003
    torch.testing.assert_close(fit.rotation[2], torch.tensor(0.3), atol=0.05, rtol=0)
    held = fit_pose(decode, torch.zeros(subspace.size), target, radius=0.05, steps=150)  # inside a wall
    assert float(held.coordinates.norm()) <= 0.05 + 1e-6
    assert held.chamfer < 0.01  # a moved copy: the pose alone reaches it
