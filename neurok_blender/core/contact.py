"""Penalty contact with planes (the ground, colliders' surfaces): spring, dashpot and regularized
Coulomb friction.

Each contact point i carries a share w_i of the body's mass (sum w_i = M). While a fraction phi of that
mass touches, the body rests on those points, so each behaves as if it held the effective mass
m_i = w_i / phi; spring k_i = k w_i and dashpot c_i = 2 zeta sqrt(k_i m_i) then give the whole body the
damping ratio zeta whether it lands on a face or on one corner.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch


def restitution_damping_ratio(restitution: float) -> float:
    """The damping ratio zeta whose contact keeps the fraction e of the normal speed.

    The spring-dashpot force is clipped at zero (it never pulls), so the impact ends when the force
    vanishes, not when the penetration does; for that model (Schwager & Poeschel 2007), with
    w = sqrt(|1 - zeta^2|):
        e = exp(-zeta/w (pi - atan(2 zeta w / (w^2 - zeta^2))))     zeta < 1/sqrt(2)
        e = exp(-zeta/w atan(2 zeta w / (zeta^2 - w^2)))            1/sqrt(2) <= zeta < 1
        e = exp(-zeta/w ln((zeta + w) / (zeta - w)))                zeta > 1
    e falls monotonically from 1 (zeta = 0) towards 0, which no finite damping reaches; bisection.
    """
    if restitution >= 1.0:
        return 0.0
    low, high = 0.0, 50.0
    for _ in range(80):
        mid = 0.5 * (low + high)
        if _restitution(mid) > restitution:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def _restitution(zeta: float) -> float:
    w = math.sqrt(abs(1.0 - zeta * zeta))
    if zeta < 1 / math.sqrt(2):
        return math.exp(-zeta / w * (math.pi - math.atan(2 * zeta * w / (w * w - zeta * zeta))))
    if zeta < 1.0:
        return math.exp(-zeta / w * math.atan(2 * zeta * w / (zeta * zeta - w * w)))
    if zeta == 1.0:
        return math.exp(-2.0)
    return math.exp(-zeta / w * math.log((zeta + w) / (zeta - w)))


@dataclass
class ContactPlanes:
    """The surfaces the contact points meet, one plane per (point, surface) pair: ``slots`` surfaces
    (the ground, the nearest collider) for each of the C contact points, pairs ordered slot by slot.
    depth = offset - normal . x; the surface moves at ``velocity`` (obstacles.py)."""

    normal: torch.Tensor  # (B, S C, 3) unit
    offset: torch.Tensor  # (B, S C) m
    velocity: torch.Tensor  # (B, S C, 3) m/s
    friction: torch.Tensor  # (B, S C) Coulomb coefficient of the pair
    owner: torch.Tensor  # (B, S C) long: the body whose surface it is (a scene's row), -1 for none
    slots: int

    def depth(self, x):
        """Penetration (B, S C) of the contact points x (B, C, 3) into each plane, 0 where clear."""
        return torch.clamp(self.signed_depth(x), min=0.0)

    def signed_depth(self, x):
        """offset - n . x (B, S C) of the contact points x (B, C, 3): the penetration, < 0 where clear."""
        return self.offset - (self.normal * x.repeat(1, self.slots, 1)).sum(-1)

    def tangents(self):
        """Two unit vectors (B, S C, 3, 2) spanning each plane."""
        n = self.normal
        helper = torch.where((n[..., :1].abs() < 0.9), torch.tensor([1.0, 0.0, 0.0], dtype=n.dtype),
                             torch.tensor([0.0, 1.0, 0.0], dtype=n.dtype))
        first = torch.linalg.cross(n, helper)
        first = first / first.norm(dim=-1, keepdim=True)
        return torch.stack([first, torch.linalg.cross(n, first)], -1)

    @staticmethod
    def concatenate(planes: list["ContactPlanes"]) -> "ContactPlanes":
        return ContactPlanes(*(torch.cat([getattr(p, k) for p in planes], 1)
                               for k in ("normal", "offset", "velocity", "friction", "owner")),
                             sum(p.slots for p in planes))


def plane_forces(x, v, share, planes: ContactPlanes, stiffness, zeta, regularization, step, mobile_mass=None,
                 fastest_rate=None, reduced=None):
    """Forces at contact points x, v (B, C, 3) with mass shares ``share`` (B, C) against ``planes``, one
    per (point, plane) pair, split as (conservative spring, dissipative dashpot + friction), each
    (B, S C, 3), the normal force (B, S C) N of each pair, and the coefficient (B, S C) N s/m of its
    dashpot (0 where clear), which an implicit step takes as it is here.
    ``stiffness`` (B,) s^-2 per unit mass.

    ``mobile_mass`` (B, C), when given, bounds each point's own effective mass from below (a deforming
    body can move one point with little inertia, more so away from rest): the spring acts with at most
    that mass, so its frequency stays sqrt(k) and explicit steps stay stable, and the caps below use
    it. The part of the spring it takes away is returned with the non-conservative forces, so the
    energy bookkeeping books it as work done, not as a potential.

    Normal: f_n = max(0, k_i d - c_i v_n) with depth d = o - n . x and v_n = n . (v - u), u the
    surface's velocity. Friction, regularized Coulomb: f_t = -mu f_n v_t / sqrt(|v_t|^2 + eps^2), v_t
    the slip (v - u) - v_n n. The dashpot is capped at m_i |v_n| / h and friction at m_i |v_t| / h,
    forces that stop the point within one step h, so explicit steps stay stable at any setting
    (capped with the point's own share w_i instead, a body landing on a few of its points loses only
    part of the speed Coulomb takes); the joint cap below keeps the steps stable. ``step`` None: no
    caps (an implicit step takes them at any rate).

    ``reduced`` (B, S C), when given, scales each pair's mass to the two-body reduced mass
    m_i M_o / (M_o + M) against a body of mass M_o (1 against the ground or a collider): the spring
    and dashpot between two bodies then ring at sqrt(k) and with the damping ratio zeta, as against
    the ground, whatever their masses.

    ``fastest_rate(c, basis)``, when given, is the largest rate (1/s) of the damping M^-1 sum_p c_p
    J_p^T B_p B_p^T J_p that coefficients c (B, S C) add along the directions ``basis`` (B, S C, 3, k),
    and the touching points are capped together with it: a body that lands on an edge or a corner
    turns about it, so those points move with less inertia than the mass they carry, and their
    dampers, each stable alone, together could stop it faster than a step. Dashpots and friction are
    each scaled so their damping stops the body within a step at most, rate h <= 1.
    """
    b, c, _ = x.shape
    slots = planes.slots
    depth = planes.depth(x)
    touching = (depth > 0).to(x.dtype)
    point_touching = touching.view(b, slots, c).amax(1)
    touching_share = (share * point_touching).sum(-1, keepdim=True) / share.sum(-1, keepdim=True).clamp(min=1e-300)
    effective_mass = share / torch.where(touching_share > 0, touching_share, 1.0)  # a body not touching: no contact force
    acting_share = share  # the mass the spring acts with
    if mobile_mass is not None:
        effective_mass, acting_share = torch.minimum(effective_mass, mobile_mass), torch.minimum(share, mobile_mass)
    share, effective_mass, acting_share = (a.repeat(1, slots) for a in (share, effective_mass, acting_share))
    if reduced is not None:
        share, effective_mass, acting_share = share * reduced, effective_mass * reduced, acting_share * reduced
    n = planes.normal
    relative = v.repeat(1, slots, 1) - planes.velocity
    v_n = (relative * n).sum(-1)
    stiffness = stiffness[:, None]
    spring_n = stiffness * share * depth
    cap = torch.full_like(effective_mass, math.inf) if step is None else effective_mass / step  # stops it in a step
    dashpot = torch.minimum(2 * zeta[:, None] * torch.sqrt(stiffness * acting_share * effective_mass), cap)
    if fastest_rate is not None:
        dashpot = dashpot * within_a_step(fastest_rate(dashpot * touching, n[..., None]), step)
    normal = torch.clamp(stiffness * acting_share * depth - dashpot * v_n * touching, min=0.0)
    v_t = relative - v_n[..., None] * n
    slip = torch.sqrt((v_t * v_t).sum(-1) + regularization**2)
    coulomb = torch.minimum(planes.friction * normal / slip, cap)
    if fastest_rate is not None:
        coulomb = coulomb * within_a_step(fastest_rate(coulomb, planes.tangents()), step)
    spring = spring_n[..., None] * n
    resist = (normal - spring_n)[..., None] * n - coulomb[..., None] * v_t
    return spring, resist, normal, dashpot * touching


def within_a_step(rate, step):
    """The factor (B, 1) that brings a damping rate (B,) down to 1 / h where it is above."""
    return torch.clamp(1.0 / (step * rate).clamp(min=1e-300), max=1.0)[:, None]


def damping_ratios(restitution: torch.Tensor) -> torch.Tensor:
    """restitution_damping_ratio for each body."""
    return torch.as_tensor(np.array([restitution_damping_ratio(float(e)) for e in restitution]), dtype=restitution.dtype)
