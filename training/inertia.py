"""A training term that keeps the learned coordinates' inertia out to the solver's wall.

The solver moves a body on z = mu_cond + A^T s (``reduction.py``) with the latent mass matrix
M_ss(s) = J(s)^T m J(s), J = dy/ds, and lets s roam out to its wall |s| = S (``neural.wall_radius``,
8 to 10 prior standard deviations). A decoder trained long on large deformations flattens somewhere
inside that ball: along some direction that moves the body at rest, J(s) v falls towards zero, that
direction loses its inertia, and a load along it (a spin's centrifugal pull) drives s at thousands of
standard deviations a second (``benchmarks.latent_folds``, docs/model.md). The solver's default map
is the decoder's second-order expansion at rest (``neural.QuadraticMotions``), whose Jacobian
J0 + r D_u J along a ray s = r u can lose rank where the network's does not, so the term asks both
to keep a share of each direction's rest inertia at a point of the ball:

    J(z) b_i = (t(z + h b_i) - t(z)) / h, less its rigid part      (t: the query points' displacements)
    M(J) = J^T J / Q  over the sketch b_1..b_n                      (equal masses at the query points)
    held(J) = lambda_min(W^T M(J) W),  W: M(J(mu_cond))'s moving directions scaled to rest inertia 1
    R = relu(KEEP - held(J(mu + r u))) + relu(KEEP - held(J(mu) + r (J(mu + h u) - J(mu - h u)) / 2h))

with b_i an orthonormal sketch of the decoder's active directions (a randomized range finder:
J(z_i)^T w_i for z_i ~ N(mu_cond, I) and random w_i, as the solver's subspace comes from gradients at
such z, ``reduction.active_subspace``), u a uniform unit direction in its span and r uniform in
[0, RADIUS] (it should reach past the wall that calibration will give the weights: the posteriors'
reach, ``training/calibrate.py``). The rest inertia is a fixed target (no gradient), so the term is met by keeping the
inertia out there, not by shrinking it at rest; a direction that hardly moves the body at rest
(below MOVING of the mean, which the solver's inertia floor lifts) is left out.
"""

import torch

from neurok_blender.core.model import NeuROKModel

KEEP = 0.5  # of a direction's rest inertia kept anywhere inside RADIUS
RADIUS = 9.0  # prior standard deviations (default): past the wall S = sqrt(k) + margin the weights are calibrated to
SKETCH = 16  # cotangents of the range finder: the solver's active subspace holds 3 to 16 directions
EXAMPLES = 4  # of the batch's first examples carry the term (each costs about five examples' reconstruction)
MOVING = 0.1  # of the mean rest inertia: a direction below it hardly moves the body (the solver floors it)
STEP = 0.05  # h, prior standard deviations
QUERY_STRIDE = 8  # every eighth query point (they lie part by part in farthest-point order)


@torch.compiler.disable  # the range finder differentiates inside the loss: run eagerly under torch.compile
def inertia_loss(model: NeuROKModel, prior_mean: torch.Tensor, tokens: torch.Tensor, query_features: torch.Tensor,
                 queries: torch.Tensor, generator: torch.Generator, radius: float = RADIUS) -> torch.Tensor:
    """R (above), averaged over the batch's first EXAMPLES examples, for priors ``prior_mean`` (B, L, c), shape tokens (B, L, w)
    query features (B, Q, f) and query points (B, Q, 3); differentiable in the model's weights. ``generator`` (CPU) draws the
    sketch, the directions and the points' distances from the prior mean, up to ``radius``."""
    prior_mean, tokens = prior_mean[:EXAMPLES], tokens[:EXAMPLES]
    features, points = query_features[:EXAMPLES, ::QUERY_STRIDE], queries[:EXAMPLES, ::QUERY_STRIDE]
    batch, latent_shape = prior_mean.shape[0], prior_mean.shape[1:]
    device, dtype = prior_mean.device, prior_mean.dtype

    def displacements(z):  # z (B, n, L, c) -> t (B, n, Q', 3)
        n = z.shape[1]
        _, t = model.motions(z.flatten(0, 1), tokens.repeat_interleave(n, 0), features.repeat_interleave(n, 0))
        return t.unflatten(0, (batch, n))

    def draw(*shape):
        return torch.randn(shape, generator=generator).to(device=device, dtype=dtype)

    with torch.enable_grad():  # J(z_i)^T w_i at z_i ~ N(mu_cond, I): the directions that move the queries
        spread = (prior_mean.detach()[:, None] + draw(batch, SKETCH, *latent_shape)).requires_grad_(True)
        moved = displacements(spread)
        (pulled,) = torch.autograd.grad((moved * draw(*moved.shape)).sum(), spread)
    basis = torch.linalg.qr(pulled.flatten(2).transpose(1, 2)).Q.transpose(1, 2).unflatten(-1, latent_shape)
    u = torch.einsum("bsl,bs->bl", basis.flatten(2), draw(batch, SKETCH))  # (B, L c), then unit
    u = (u / u.norm(dim=-1, keepdim=True)).unflatten(-1, latent_shape)[:, None]
    distance = radius * torch.rand((batch, 1, 1, 1), generator=generator).to(device=device, dtype=dtype)
    rest = prior_mean.detach()[:, None]
    centres = torch.cat([rest, rest + STEP * u, rest - STEP * u, prior_mean[:, None] + distance * u], 1)
    probes = centres[:, :, None] + STEP * torch.cat([torch.zeros_like(basis[:, :1]), basis], 1)[:, None]
    t = displacements(probes.flatten(1, 2)).unflatten(1, probes.shape[1:3])  # (B, centre, 1 + SKETCH, Q', 3)
    columns = deformation_part((t[:, :, 1:] - t[:, :, :1]) / STEP, points[:, None, None])  # J b_i, rigid part out
    at_rest, ahead, behind, network = columns.unbind(1)
    expanded = at_rest + distance * (ahead - behind) / (2 * STEP)  # the quadratic expansion's J at r u

    def inertia(j):  # (B, SKETCH, SKETCH): J^T J over the query points
        return torch.einsum("bsqi,brqi->bsr", j, j) / j.shape[-2]

    values, vectors = torch.linalg.eigh(inertia(at_rest).detach())
    kept = values >= MOVING * values.clamp_min(0).mean(-1, keepdim=True)  # the directions that move the body at rest
    whiten = vectors * (kept / values.clamp_min(1e-30)).sqrt()[:, None]  # their rest inertia to 1, others to 0
    unmoving = (~kept).to(dtype).diag_embed()

    def held(j):  # the least share of its rest inertia a moving direction keeps under J
        return torch.linalg.eigvalsh(whiten.transpose(1, 2) @ inertia(j) @ whiten + unmoving)[:, 0]

    return (torch.relu(KEEP - held(network)) + torch.relu(KEEP - held(expanded))).mean()


def deformation_part(velocity: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """A velocity field u (..., Q, 3) at ``points`` (..., Q, 3) less its best rigid motion t + w x r
    (least squares, equal weights, r from the points' centroid): the solver carries rigid motion in
    its own coordinates and takes it out of the decoder's field (the mean-axis frame)."""
    arms = points - points.mean(-2, keepdim=True)
    relative = velocity - velocity.mean(-2, keepdim=True)
    eye = torch.eye(3, dtype=arms.dtype, device=arms.device)
    inertia = (arms * arms).sum((-1, -2))[..., None, None] * eye - torch.einsum("...qi,...qj->...ij", arms, arms)
    spin = torch.linalg.solve(inertia + 1e-9 * eye, torch.linalg.cross(arms, relative).sum(-2)[..., None])[..., 0]
    return relative - torch.linalg.cross(*torch.broadcast_tensors(spin[..., None, :], arms))
