"""Inverse kinematics in the learned coordinates: the reduced latent and rigid pose that match a target.

    min_{s, theta, p}  Chamfer-L1( p + R(theta) F(mu_cond + A^T s),  target )

The target is a point set with no correspondence to the mesh (a scan, another mesh's vertices). This
is the paper's pose-fitting task; the dynamics use the same decoder for their initial states.
"""

from dataclasses import dataclass

import torch

from .model import NeuROKModel
from .reduction import Subspace
from .rotation import exp_so3

STEPS = 200
LEARNING_RATE = 0.03


def chamfer_l1(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1/2 (mean_a min_b |a - b| + mean_b min_a |a - b|), Euclidean distances (not squared)."""
    distance = torch.cdist(a, b)
    return 0.5 * (distance.min(1).values.mean() + distance.min(0).values.mean())


@dataclass
class Fit:
    latent: torch.Tensor  # z (L, c)
    rotation: torch.Tensor  # rotation vector (3,)
    translation: torch.Tensor  # (3,)
    points: torch.Tensor  # the fitted points, model units
    chamfer: float


def fit_pose(model: NeuROKModel, prior_mean, tokens, query_features, queries, points, skin, target,
             subspace: Subspace | None = None, steps: int = STEPS, rigid: bool = True) -> Fit:
    """Fit the decoded ``points`` (N, 3, model units) to ``target`` (M, 3, model units) by Adam.

    ``subspace=None`` optimizes the full latent (the no-reduction ablation) starting from mu_cond.
    """
    size = prior_mean.shape if subspace is None else (subspace.size,)
    coordinates = torch.zeros(size, dtype=prior_mean.dtype, requires_grad=True)
    rotation = torch.zeros(3, dtype=prior_mean.dtype, requires_grad=rigid)
    translation = (target.mean(0) - points.mean(0)).detach().clone().requires_grad_(rigid)
    variables = [coordinates] + ([rotation, translation] if rigid else [])
    optimizer = torch.optim.Adam(variables, lr=LEARNING_RATE)

    def pose(latent):
        decoded = model.deform(latent, tokens, query_features, queries, points, skin)
        center = points.mean(0)
        return (decoded - center) @ exp_so3(rotation).T + center + translation

    def latent_of(c):
        return prior_mean + c if subspace is None else subspace.latent(prior_mean, c)

    with torch.enable_grad():
        for _ in range(steps):
            loss = chamfer_l1(pose(latent_of(coordinates)), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        latent = latent_of(coordinates)
        fitted = pose(latent)
        return Fit(latent, rotation.detach(), translation.detach(), fitted, float(chamfer_l1(fitted, target)))
