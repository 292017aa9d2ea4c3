"""Model reduction: the few latent directions that matter for one object (the paper's active subspace).

    G(z) = sqrt(mean_j |t_j(z)|^2)                    proxy: size of the decoded deformation, over
                                                       every PROXY_STRIDE-th query point
    C    = E_{z ~ N(mu_cond, I)} [grad G grad G^T]     (k x k, Monte Carlo)
    z    = mu_cond + A^T s,   A = top k_q eigenvectors of C

Directions along which G does not change on average move nothing, so the dynamics can leave them
out: k_q reduced coordinates s instead of the k = L c latent dimensions.
"""

from dataclasses import dataclass

import torch

from .model import NeuROKModel

SAMPLES = 64
PROXY_STRIDE = 2  # the queries lie part by part in farthest-point order, so every other one still spreads
# over each part of two or more: the same directions to Monte Carlo noise at half the decoder's work
# (docs/benchmarks.md, "Speed")
MOTION_FLOOR = 1e-3  # a reduced direction must move the mass by this share of the object's size per prior std
CAPTURED = 0.95  # default k_q: the fewest directions holding this share of C's trace ...
MAX_COORDINATES = 16  # ... and never more than this many


@dataclass
class Subspace:
    basis: torch.Tensor  # A (k_q, L, c): z = mu_cond + sum_i s_i A_i
    eigenvalues: torch.Tensor  # all k of C, descending

    @property
    def size(self) -> int:
        return len(self.basis)

    def latent(self, prior_mean, s):
        """z (..., L, c) for reduced coordinates s (..., k_q)."""
        return prior_mean + torch.einsum("...i,ilc->...lc", s, self.basis)


def active_subspace(model: NeuROKModel, prior_mean, tokens, query_features, coordinates: int | None = None,
                    samples: int = SAMPLES, seed: int = 0) -> Subspace:
    """The active subspace of one object; ``coordinates=None`` keeps CAPTURED of the trace (at most
    MAX_COORDINATES)."""
    generator = torch.Generator(device=prior_mean.device).manual_seed(seed)
    noise = torch.randn((samples, *prior_mean.shape), generator=generator, dtype=prior_mean.dtype,
                        device=prior_mean.device)
    z = (prior_mean + noise).requires_grad_(True)
    with torch.enable_grad():
        _, displacement = model.motions(z, tokens, query_features[..., ::PROXY_STRIDE, :])
        proxy = (displacement ** 2).sum(-1).mean(-1).sqrt()  # (samples,)
        (gradient,) = torch.autograd.grad(proxy.sum(), z)  # each sample's G depends on its own z only
    gradient = gradient.reshape(samples, -1)
    covariance = gradient.T @ gradient / samples
    eigenvalues, vectors = torch.linalg.eigh(covariance)
    eigenvalues, vectors = eigenvalues.flip(0).clamp_min(0), vectors.flip(1)
    if coordinates is None:
        share = torch.cumsum(eigenvalues, 0) / eigenvalues.sum().clamp_min(1e-30)
        coordinates = min(int((share < CAPTURED).sum()) + 1, MAX_COORDINATES)
    return Subspace(vectors[:, :coordinates].T.reshape(coordinates, *prior_mean.shape).detach(), eigenvalues.detach())


def drop_massless(subspace: Subspace, reduced_mass: torch.Tensor, mass: float, size: float,
                  floor: float = MOTION_FLOOR) -> Subspace:
    """The subspace rotated to the eigenvectors of the reduced mass matrix M_ss = Y^T m Y at rest (an
    orthogonal change, so z keeps the prior's metric), keeping the directions whose RMS motion of the
    mass, sqrt(eigenvalue / mass), is at least ``floor`` times ``size`` per prior standard deviation.

    A direction below it hardly moves the body to first order, yet the decoder's curvature moves it
    further out: loads meet almost no inertia along it and drive s far, where that curvature folds
    the map."""
    eigenvalues, vectors = torch.linalg.eigh(reduced_mass.to(subspace.basis.dtype))
    eigenvalues, vectors = eigenvalues.flip(0), vectors.flip(1)
    keep = eigenvalues >= mass * (floor * size) ** 2
    return Subspace(torch.einsum("ij,ilc->jlc", vectors[:, keep], subspace.basis), subspace.eigenvalues)
