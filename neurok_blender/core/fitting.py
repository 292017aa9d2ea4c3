"""Inverse kinematics in the learned coordinates: the reduced latent and rigid pose that match a target.

    min_{s, theta, p}  Chamfer-L1( p + R(theta) F(mu_cond + A^T s),  target )

The target is a point set with no correspondence to the mesh (a scan, another mesh's vertices). This
is the paper's pose-fitting task; the dynamics use the same decoder for their initial states. Any
map of coordinates to points fits the same way (``fit_pose``'s ``decode``: the solver's own map,
say, with its coordinates held inside its wall).
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
    coordinates: torch.Tensor  # the fitted coordinates c
    rotation: torch.Tensor  # rotation vector (3,)
    translation: torch.Tensor  # (3,)
    points: torch.Tensor  # the fitted points, model units
    chamfer: float


def latent_decoder(model: NeuROKModel, prior_mean, tokens, query_features, queries, points, skin,
                   subspace: Subspace | None = None):
    """c -> F(mu_cond + A^T c) at ``points`` (N, 3, model units): the decoder on the reduced
    coordinates c of ``subspace``, or with ``subspace=None`` on the full latent, c = z - mu_cond."""
    def decode(c):
        latent = prior_mean + c if subspace is None else subspace.latent(prior_mean, c)
        return model.deform(latent, tokens, query_features, queries, points, skin)

    return decode


def fit_pose(decode, start: torch.Tensor, target: torch.Tensor, radius: float | None = None, steps: int = STEPS,
             rigid: bool = True) -> Fit:
    """Fit the points ``decode(c)`` (N, 3) to ``target`` (M, 3) by Adam on c (from ``start``, the rest
    shape's coordinates) and the rigid pose, turning about the rest shape's centroid; with ``radius``
    every iterate of c is projected back onto the ball |c| <= radius (the solver's wall)."""
    coordinates = start.detach().clone().requires_grad_(True)
    with torch.no_grad():
        center = decode(coordinates).mean(0)
    rotation = torch.zeros(3, dtype=target.dtype, requires_grad=rigid)
    translation = (target.mean(0) - center).detach().clone().requires_grad_(rigid)
    variables = [coordinates] + ([rotation, translation] if rigid else [])
    optimizer = torch.optim.Adam(variables, lr=LEARNING_RATE)

    def pose(c):
        return (decode(c) - center) @ exp_so3(rotation).T + center + translation

    with torch.enable_grad():
        for _ in range(steps):
            loss = chamfer_l1(pose(coordinates), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if radius is not None:
                with torch.no_grad():
                    coordinates.mul_(torch.clamp(radius / coordinates.norm().clamp(min=1e-300), max=1.0))
    with torch.no_grad():
        fitted = pose(coordinates)
        return Fit(coordinates.detach(), rotation.detach(), translation.detach(), fitted,
                   float(chamfer_l1(fitted, target)))
