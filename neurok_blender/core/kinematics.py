"""The kinematic map: generalized coordinates q -> world positions of material points.

Everything the engine needs (mass matrix, quadratic velocity term, generalized forces) comes from
this one differentiable function, so rigid, articulated and learned coordinates plug in alike.
"""

from dataclasses import dataclass

import torch
from torch.func import jvp, vmap

MASS = "mass"  # the point set every map has: its mass points


@dataclass
class MassTerms:
    """The sums over the mass points that the equations of motion take, at (q, q_dot), per body."""

    mass_matrix: torch.Tensor  # (B, n, n) M = sum m J^T J
    quadratic: torch.Tensor  # (B, n) sum m J^T d2x[q_dot, q_dot], d2x[q_dot, q_dot] = (dJ/dt) q_dot
    kinetic_gradient: torch.Tensor  # (B, n) dT/dq at fixed q_dot
    moment: torch.Tensor  # (B, 3, n) sum m J: a uniform field of acceleration g acts with moment^T g


def forward_jacobian(q: torch.Tensor, embed) -> tuple[torch.Tensor, torch.Tensor]:
    """x = embed(q) (B, P, 3) and J = dx/dq (B, P, 3, n), one jvp per coordinate direction."""
    eye = torch.eye(q.shape[1], dtype=q.dtype)
    return embed(q), vmap(lambda d: jvp(embed, (q,), (d.expand_as(q),))[1], out_dims=-1)(eye)


def rows_at(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Each body's points index[b] of t (B, P, ...): (B, I, ...)."""
    return t[torch.arange(t.shape[0])[:, None], index]


class KinematicMap:
    """Base class. Subclasses call ``super().__init__()``, set the attributes below and implement ``embed``.

    mass_points: (B, N, 3) rest positions of the points that carry the mass (the point set MASS)
    masses:      (B, N)    their masses in kg (zero for padding)
    rigid_dofs:  (n,) bool coordinates of rigid motion, left alone by Rayleigh damping

    Points are asked about by name: a caller attaches a named set of material points once
    (``attach``), and ``embed``, ``jacobian`` and ``derivatives`` take that name, so a learned map
    prepares each set once (its neighbours among the query points, its expansion) and finds it again.

    ``jacobian`` and ``derivatives`` work for any differentiable ``embed`` through forward-mode
    products; a map may override them with closed forms (the rigid map does, about 20x faster).
    """

    mass_points: torch.Tensor
    masses: torch.Tensor
    rigid_dofs: torch.Tensor
    orientation: torch.Tensor | None = None  # R_ref (B, 3, 3) of maps whose rotation vector starts from it

    def __init__(self):
        self.point_sets: dict[str, torch.Tensor] = {}

    @property
    def batch(self) -> int:
        return self.masses.shape[0]

    @property
    def n_dof(self) -> int:
        return self.rigid_dofs.shape[0]

    @property
    def dtype(self) -> torch.dtype:
        return self.masses.dtype

    def rest_coordinates(self) -> torch.Tensor:
        """q of the undeformed body where it stands: (B, n)."""
        return torch.zeros(self.batch, self.n_dof, dtype=self.dtype)

    @property
    def extent(self) -> torch.Tensor:
        """The body's size (B,), m: the diagonal of its mass points' bounding box at rest."""
        points = self.embed(self.rest_coordinates(), MASS)
        return (points.amax(1) - points.amin(1)).norm(dim=-1)

    def attach(self, name: str, points: torch.Tensor, parts=None, output: bool = False) -> None:
        """Name material points (B, P, 3) given at rest, to be asked about as ``name`` (called before
        any transform runs: a learned map finds their neighbours among its query points here, each
        point among its part's, ``parts`` (P,) when known). Attaching a name again with other points
        replaces them. ``output=True``: the points are only drawn, never differentiated."""
        self.point_sets[name] = points

    def points(self, name: str) -> torch.Tensor:
        """The rest positions (B, P, 3) attached as ``name``."""
        if name == MASS:
            return self.mass_points
        if name not in self.point_sets:
            raise KeyError(f"no points attached to the map as {name!r} (KinematicMap.attach)")
        return self.point_sets[name]

    def embed(self, q: torch.Tensor, name: str) -> torch.Tensor:
        """World positions (B, P, 3) at q of the material points attached as ``name``."""
        raise NotImplementedError

    def frame(self, q, name: str):
        """What ``draw`` needs of the points ``name`` at q, kept while the map moves on (``recenter``):
        here their positions (B, P, 3), drawn now. A map that draws many frames in one pass keeps what
        it needs of q instead (``NeuralBodyMap``)."""
        return self.embed(q, name)

    def draw(self, frames: list, name: str) -> torch.Tensor:
        """World positions (F, B, P, 3) of the points ``name`` at F ``frame``s."""
        return torch.stack(frames)

    def jacobian(self, q, name, index=None):
        """x (B, P, 3) and J = dx/dq (B, P, 3, n), one jvp per coordinate direction; with ``index``
        (B, I), those of each body's points index[b] alone, (B, I, 3) and (B, I, 3, n)."""
        x, jac = forward_jacobian(q, lambda qq: self.embed(qq, name))
        return (x, jac) if index is None else (rows_at(x, index), rows_at(jac, index))

    def derivatives(self, q, q_dot, name):
        """x, v = J q_dot, J and H with H[..., k] = d(J q_dot)/dq_k, from nested jvps (no Hessian)."""

        def position_and_velocity(qq):
            return jvp(lambda c: self.embed(c, name), (qq,), (q_dot,))

        def column(direction):
            _, (dx, dv) = jvp(position_and_velocity, (q,), (direction.expand_as(q),))
            return dx, dv

        eye = torch.eye(q.shape[1], dtype=q.dtype)
        jac, hess = vmap(column, out_dims=-1)(eye)
        x, v = position_and_velocity(q)
        return x, v, jac, hess

    def mass_terms(self, q: torch.Tensor, q_dot: torch.Tensor) -> MassTerms:
        """``MassTerms`` from the mass points' x, v, J and H (``derivatives``); a map may override it
        with a closed form that never builds J per point (the posed maps do, ``rigid.posed_mass_terms``)."""
        _, v, jac, hess = self.derivatives(q, q_dot, MASS)
        m = self.masses[..., None]
        weighted = (m[..., None] * jac).flatten(1, 2)  # (B, 3P, n)
        d2x = (hess @ q_dot[:, None, :, None])[..., 0]
        return MassTerms(mass_matrix=weighted.transpose(1, 2) @ jac.flatten(1, 2),
                         quadratic=(weighted.transpose(1, 2) @ d2x.flatten(1)[..., None])[..., 0],
                         kinetic_gradient=((m * v).flatten(1)[:, None] @ hess.flatten(1, 2))[:, 0],
                         moment=(m[..., None] * jac).sum(1))

    def potential(self, q: torch.Tensor) -> torch.Tensor | None:
        """Internal potential energy V(q) per body (B,), or None when there is none."""
        return None

    def potential_gradient(self, q: torch.Tensor) -> torch.Tensor | None:
        """dV/dq (B, n) in closed form, or None to let the engine differentiate ``potential``."""
        return None

    def potential_hessian(self, q: torch.Tensor) -> torch.Tensor | None:
        """d2V/dq2 (B, n, n) in closed form, or None to let the engine differentiate ``potential`` twice."""
        return None

    def recenter(self, q: torch.Tensor, q_dot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Change of chart between steps (same configuration and velocity, better coordinates)."""
        return q, q_dot

    def flow(self, q: torch.Tensor) -> torch.Tensor:
        """Irreversible change between steps (plastic flow of the rest shape) at q; returns the
        potential energy it dissipated per body (B,), zero for a map without it."""
        return torch.zeros(self.batch, dtype=self.dtype)

    def snapshot(self):
        """What the map carries besides q (the reference orientation that ``recenter`` moves; a
        learned map adds its plastic rest shape): a frame redone from its start must start from the
        map as its q was given, not from where the failed attempt left it."""
        return self.orientation

    def restore(self, snapshot) -> None:
        """Back to a ``snapshot()`` taken earlier."""
        self.orientation = snapshot

    def pose(self, q: torch.Tensor) -> dict[str, torch.Tensor]:
        """The configuration in fixed, chart-free terms for reporting, per body."""
        return {"coordinates": q}

    def chart_speed(self, q_dot: torch.Tensor) -> float:
        """How fast the coordinates leave their chart (rad/s); bounds the length of one integration chunk."""
        return 0.0

    def latent_speed(self, q_dot: torch.Tensor) -> float:
        """How fast learned coordinates move (prior standard deviations per second); bounds the step."""
        return 0.0
