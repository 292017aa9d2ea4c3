"""An articulated body's potential: each part keeps its shape, the parts stay joined, the joints are free.

The elastic potential (``neural.py``) is a spring from every mass point back to its rest place in the
body's frame, so a lid swung open on its hinge is pulled shut as if the hinge were a torsion spring.
A free hinge has none: in the reference (MuJoCo, ``training/reference/articulated.py``) only the
joint limits, joint damping and the ground hold the parts. For a body of loose parts (its links) the
potential is instead

    V(s) = 1/2 omega^2 ( sum_P min_R sum_{i in P} m_i |y_i - ybar_P - R a_i|^2  +  sum_j m_j |y_a(x_j) - y_b(x_j)|^2 )

- shape matching per part P (Mueller et al. 2005): its points y_i against the best rigid motion of
  their rest arms a_i = xbar_i - xbar_P about the part's centre (the translation is then the centroid
  ybar_P, the rotation R the polar factor of A = sum m (y - ybar) a^T = U S V^T: R = U D V^T, D =
  diag(1, 1, det U V^T)). A part moved rigidly, by any angle, costs nothing; one bent costs what the
  elastic spring would;
- a joint spring at each point x_j where parts a and b touch, x_j carried once by a's motion and once
  by b's: zero while they move together there. Parts that touch along a line swing about it (a hinge),
  at a point about it (a ball joint), and over a patch not at all. Its mass m_j: the lighter part's,
  spread over the pair's points, so the joint holds at the material's own frequency.

By the envelope theorem (R and ybar are optimal) the gradient in y is m_i u_i with the residual
u_i = y_i - ybar_P - b_i, b_i = R a_i. The exact Hessian of a part's term (R varying with y: the
symmetric factor S' = R^T A = V D S V^T, dR = [R (tr S' - S')^-1 R^T sum m b x dy]_x R) is

    d2(E/2) = M - (M 1)(M 1)^T / M_P - (sum m [b]x)^T K^-1 (sum m [b]x),   K = U (tr DS - DS) U^T,

which at u = 0 is M minus the part's rigid motions (K its inertia tensor): the implicit step sees no
stiffness along a swing. Through a map y(s) with Jacobian J: J^T d2(E/2) J + sum m u . d2y/ds2.
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

from .mesh import farthest_points, triangle_areas
from .surface import sample_surface

JOINT_SAMPLES = 4096  # area-uniform surface samples that find where parts touch
TOUCH = 1.5  # a sample within this many sample spacings of another part's sample touches it
JOINT_POINTS = 8  # joint springs per touching pair, spread along where they touch
SINGULAR = 1e-9  # of K's trace: the inertia a rod has about its own axis (no rotation to find there)


@dataclass(frozen=True)
class Joints:
    """Where parts touch: points (J, 3) and the two parts (J,) each joins."""

    points: np.ndarray
    first: np.ndarray
    second: np.ndarray


def find_joints(vertices: np.ndarray, faces: np.ndarray, parts: np.ndarray, seed: int = 0) -> Joints:
    """The joints of a mesh whose vertices are labelled by ``parts`` (its loose pieces: an articulated
    object's links). Samples of two parts within TOUCH spacings of each other touch there; up to
    JOINT_POINTS of their midpoints per pair, farthest-point spread. A group of parts that touches no
    other is joined to the nearest one where they come closest (within TOUCH spacings of the least
    distance: across a gap, faces facing each other weld, edges hinge, corners make a ball joint), so
    the body stays one piece."""
    vertices, faces, parts = np.asarray(vertices, np.float64), np.asarray(faces), np.asarray(parts)
    samples = sample_surface(vertices, faces, JOINT_SAMPLES, np.random.default_rng(seed))
    at, labels = samples.points, parts[faces[samples.faces, 0]]
    reach = TOUCH * np.sqrt(triangle_areas(vertices, faces).sum() / JOINT_SAMPLES)
    pairs = cKDTree(at).query_pairs(reach, output_type="ndarray")
    pairs = pairs[labels[pairs[:, 0]] != labels[pairs[:, 1]]]
    points, first, second = [], [], []

    def join(a, b, midpoints):
        chosen = farthest_points(midpoints, min(JOINT_POINTS, len(midpoints)))
        points.append(midpoints[chosen])
        first.append(np.full(len(chosen), min(a, b)))
        second.append(np.full(len(chosen), max(a, b)))

    ends = np.sort(labels[pairs], axis=1)
    for a, b in np.unique(ends, axis=0):
        touching = pairs[(ends[:, 0] == a) & (ends[:, 1] == b)]
        join(a, b, 0.5 * (at[touching[:, 0]] + at[touching[:, 1]]))
    group = _groups(int(parts.max()) + 1, ends)
    while len(np.unique(group)) > 1:  # join the first group to the nearest other where they come closest
        inside = group[labels] == group[0]
        distance, nearest = cKDTree(at[~inside]).query(at[inside])
        i = int(np.argmin(distance))
        a, b = labels[inside][i], labels[~inside][nearest[i]]
        close = (distance <= distance[i] + reach) & (labels[inside] == a) & (labels[~inside][nearest] == b)
        join(a, b, 0.5 * (at[inside][close] + at[~inside][nearest[close]]))
        group[group == group[b]] = group[a]
    if not points:
        return Joints(np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Joints(np.concatenate(points), np.concatenate(first), np.concatenate(second))


def _groups(count: int, ends: np.ndarray) -> np.ndarray:
    """The connected groups of ``count`` parts joined by the pairs ``ends`` (E, 2): a label per part."""
    group = np.arange(count)
    for a, b in ends:
        group[group == group[b]] = group[a]
    return group


@dataclass
class PartMatching:
    """The shape matching of a body's parts at one shape y (B, P, 3) of its mass points."""

    energy: torch.Tensor  # (B,) sum_P sum m |u|^2
    residual: torch.Tensor  # u (B, P, 3)
    arms: torch.Tensor  # b = R a (B, P, 3)
    part_mass: torch.Tensor  # M_P (B, G)
    inverse_inertia: torch.Tensor  # K^-1 (B, G, 3, 3)


def match_parts(y: torch.Tensor, rest: torch.Tensor, masses: torch.Tensor, parts: torch.Tensor,
                count: int) -> PartMatching:
    """Each part's best rigid motion of ``rest`` (B, P, 3) onto ``y`` (B, P, 3), the points labelled by
    ``parts`` (P,) in 0 .. count - 1, weighted by ``masses`` (B, P) (module docstring)."""
    b = y.shape[0]
    per_part = lambda values: values.new_zeros(b, count, *values.shape[2:]).index_add_(1, parts, values)
    part_mass = per_part(masses)
    weight = masses / part_mass[:, parts]
    arms = rest - per_part(weight[..., None] * rest)[:, parts]
    moved = y - per_part(weight[..., None] * y)[:, parts]
    covariance = per_part(masses[..., None, None] * moved[..., :, None] * arms[..., None, :])
    # a diverging step's non-finite points: the SVD would raise, so those parts turn by I and the NaN
    # stays in their residual, where the rollout's finiteness check finds it and redoes the frame
    broken = ~torch.isfinite(covariance).all(-1).all(-1)
    u, singular, vh = torch.linalg.svd(torch.where(broken[..., None, None], torch.eye(3, dtype=y.dtype), covariance))
    signs = torch.ones_like(singular)
    signs[..., 2] = torch.linalg.det(u @ vh).sign()
    rotation = (u * signs[..., None, :]) @ vh
    posed = torch.einsum("bpij,bpj->bpi", rotation[:, parts], arms)
    residual = moved - posed
    signed = signs * singular
    inertia = u @ torch.diag_embed(signed.sum(-1, keepdim=True) - signed) @ u.transpose(-1, -2)
    eye = torch.eye(3, dtype=y.dtype)
    inertia = inertia + SINGULAR * inertia.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None] * eye
    energy = (masses[..., None] * residual * residual).sum((1, 2))
    return PartMatching(energy, residual, posed, part_mass, torch.linalg.inv(inertia))


def matching_hessian(matching: PartMatching, masses: torch.Tensor, parts: torch.Tensor,
                     jacobian: torch.Tensor) -> torch.Tensor:
    """J^T d2(E/2) J (B, k, k) through the mass points' Jacobian ``jacobian`` (B, P, 3, k) (module
    docstring); the residual's term sum m u . d2y/ds2 is the caller's."""
    b, count = masses.shape[0], matching.part_mass.shape[1]
    per_part = lambda values: values.new_zeros(b, count, *values.shape[2:]).index_add_(1, parts, values)
    weighted = masses[..., None, None] * jacobian
    total = torch.einsum("bpik,bpil->bkl", weighted, jacobian)
    moved = per_part(weighted)  # T = sum m J (B, G, 3, k)
    turned = per_part(torch.cross(matching.arms[..., None].expand_as(weighted), weighted, dim=2))  # W = sum m b x J
    return (total - torch.einsum("bgik,bgil->bkl", moved, moved / matching.part_mass[..., None, None])
            - torch.einsum("bgik,bgij,bgjl->bkl", turned, matching.inverse_inertia, turned))
