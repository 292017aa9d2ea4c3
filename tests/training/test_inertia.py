"""The inertia term: zero for a decoder whose directions keep their inertia, positive and trainable
where the decoder flattens, blind to rigid motion."""

import json

import pytest
import torch

from tests.training.test_train import TINY, tiny_corpus
from training.inertia import RADIUS, deformation_part, inertia_loss
from training.train import train

BATCH, TOKENS, CHANNELS, QUERIES = 4, 4, 4, 64


class FieldDecoder(torch.nn.Module):
    """A stand-in decoder: query displacements W phi(z) for a fixed random W (Q, 3, L c) and phi the
    identity (the Jacobian W everywhere) or tanh (it flattens as |z| grows); a query's feature is its
    index."""

    def __init__(self, flattening: bool):
        super().__init__()
        self.flattening = flattening
        self.field = torch.nn.Parameter(torch.randn(QUERIES, 3, TOKENS * CHANNELS, dtype=torch.float64))

    def motions(self, z, tokens, query_features):
        latent = z.flatten(-2)
        latent = torch.tanh(latent) if self.flattening else latent
        displacement = torch.einsum("bqil,bl->bqi", self.field[query_features[..., 0].long()], latent)
        return torch.zeros_like(displacement), displacement


def term(decoder: FieldDecoder, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    prior_mean = torch.zeros(BATCH, TOKENS, CHANNELS, dtype=torch.float64)
    queries = torch.randn(BATCH, QUERIES, 3, generator=generator, dtype=torch.float64)
    return inertia_loss(decoder, prior_mean, torch.zeros(BATCH, TOKENS, 1, dtype=torch.float64),
                        torch.arange(QUERIES, dtype=torch.float64).expand(BATCH, QUERIES)[..., None], queries, generator)


def test_a_decoder_whose_jacobian_holds_costs_nothing_and_one_that_flattens_is_pushed_back():
    torch.manual_seed(0)
    assert float(term(FieldDecoder(flattening=False)).detach()) == pytest.approx(0.0, abs=1e-9)
    flattening = FieldDecoder(flattening=True)
    # tanh keeps 1 - tanh(r)^2 of a direction's inertia at r prior std: under half past r = 0.66,
    # so points of the ball out to RADIUS mostly fall short
    assert RADIUS > 2
    values = [float(term(flattening, seed).detach()) for seed in range(4)]
    assert min(values) > 0.05
    loss = term(flattening)
    loss.backward()
    assert flattening.field.grad is not None and float(flattening.field.grad.norm()) > 0


def test_the_deformation_part_takes_out_exactly_the_rigid_motion():
    generator = torch.Generator().manual_seed(1)
    points = torch.randn(50, 3, generator=generator, dtype=torch.float64)
    arms = points - points.mean(0)
    rigid = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64) + torch.linalg.cross(
        torch.tensor([0.5, 0.2, -0.7], dtype=torch.float64).expand_as(arms), arms)
    assert float(deformation_part(rigid, points).abs().max()) < 1e-8
    field = torch.randn(50, 3, generator=generator, dtype=torch.float64)
    kept = deformation_part(field, points)
    assert float(kept.sum(0).abs().max()) < 1e-8  # no momentum left
    assert float(torch.linalg.cross(arms, kept).sum(0).abs().max()) < 1e-8  # no angular momentum left
    assert torch.allclose(deformation_part(kept, points), kept, atol=1e-8)  # a projection
    assert torch.allclose(deformation_part(field + rigid, points), kept, atol=1e-8)


def test_training_with_the_inertia_term_logs_it_and_a_resume_must_keep_its_weight_and_radius(tmp_path):
    corpus = tiny_corpus(tmp_path)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="inertia_weight must be"):
        train(corpus, out, steps=2, batch=2, seed=0, device="cpu", config=TINY, inertia_weight=-1.0)
    train(corpus, out, steps=2, batch=2, seed=0, device="cpu", config=TINY, log_every=1, inertia_weight=10.0, until=1)
    with pytest.raises(ValueError, match="inertia_radius must be"):
        train(corpus, tmp_path / "other", steps=2, batch=2, seed=0, device="cpu", config=TINY, inertia_weight=1.0,
              inertia_radius=0.0)
    with pytest.raises(ValueError, match="inertia_weight"):
        train(corpus, out, steps=2, batch=2, seed=0, device="cpu", config=TINY, log_every=1)
    with pytest.raises(ValueError, match="inertia_radius"):
        train(corpus, out, steps=2, batch=2, seed=0, device="cpu", config=TINY, log_every=1, inertia_weight=10.0,
              inertia_radius=12.0)
    train(corpus, out, steps=2, batch=2, seed=0, device="cpu", config=TINY, log_every=1, inertia_weight=10.0)
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["inertia"] >= 0 and abs(r["loss"] - r["reconstruction"] - r["kl_weight"] * r["kl"]
                                         - 10.0 * r["inertia"]) < 1e-3 * r["loss"] for r in rows)
