"""Learned coordinates in the engine: q = (p, theta, s), rigid pose plus the reduced latent.

    x(q) = p + R_ref exp(theta) (y(s) - c),   y(s) = xbar + h (F(z(s), xbar) - F(z(0), xbar))

F is the decoder (model units, scaled back by the object's size h), z(s) = mu_cond + A^T s its active
subspace and c the rest centre of mass. Subtracting F(z(0)) makes q = (c, 0, 0) the rest shape
exactly, whatever the decoder does at the prior mean, so the body starts where the artist left it.
The engine differentiates x with forward-mode products (``KinematicMap``): mass matrix J^T m J,
quadratic velocity term and J^T f come out of the decoder's own Jacobian.

The decoder's per-query motions m(s) = (w_j, t_j) come either from the network itself ("exact": a
transformer pass per derivative, about 0.5 s per force evaluation on this CPU) or from its
second-order expansion at the rest state ("quadratic", the default):

    m(s) ~ m(0) + A s + 1/2 B[s, s],   A = dm/ds (0),  B = d2m/ds2 (0)

computed once per object by forward-mode derivatives of the network. The dynamics are then exactly
those of this quadratic map (energy is conserved to the integrator's accuracy); against the network
it differs by 0.4 % of the motion at |s| = 1, 2.5 % at 2 and 4.5 % at 3 (the shipped model on a
sphere, benchmarks/neural_speed.py).

Potential: V(s) = 1/2 omega^2 sum_i m_i |y_i(s) - xbar_i|^2, a spring for every mass point back to
its rest place in the body's own frame: zero at rest, blind to rigid motion, and with the kinetic
energy T = 1/2 sum m |x_dot|^2 every small deformation oscillates at omega. A wall term
1/2 omega^2 mu S^2 (|s| / S)^6 keeps s inside the prior's typical set, where the decoder was
trained. mu = tr(Y^T m Y) / k_q at rest is the mass an average reduced direction moves, so the wall
is measured against the spring itself; S = sqrt(k_q) + WALL_MARGIN is
the edge of the prior's typical set (|s| of a k_q-dimensional standard normal is about sqrt(k_q),
within 2.5 beyond it for all but 1e-3 of draws up to k_q = 16), and the wall is steep beyond it.
Weights may carry a calibrated margin instead (``wall_margin``: where their training posteriors lie,
``training/calibrate.py``), when the deformations they learned sit past the typical set.
Without it a spinning body could soften along a curved latent direction (the centrifugal term
sum m r . d2y/ds2 beats the spring) and run off, out of the space the decoder was trained on.

Plasticity: the springs pull towards a plastic rest shape y(s_p), s_p = 0 at the start,

    V(s) = 1/2 omega^2 ( sum_i m_i |y_i(s) - y_i(s_p)|^2  +  wall(s) ),

and s_p flows after every step where the elastic strain e = |y(s) - y(s_p)|_m / |xbar - c|_m (mass-
weighted RMS of the springs' stretch over the body's radius of gyration) passes the yield strain
e_y: s_p <- s - (e_y / e)(s - s_p), the return of a Prandtl element (a spring in series with a
friction slider) to its yield surface. The energy the springs lose that way is dissipated, so the
energy balance still closes. A body that never yields (e_y None) is the elastic one above.
The wall stays on s itself: it bounds the shapes, plastic or not, to where the decoder was trained.

Articulated bodies (their loose parts are links on free joints): the springs above would pull a
swung part back to its rest pose, so their springs are instead each part's shape matching and a
spring at each point where two parts touch (``articulation.py``): a part turned rigidly costs
nothing, at any angle. The mass points are then condensed part by part.

Inertia floor (selective mass scaling): the decoder moves some reduced directions hardly at all, with
rest masses (eigenvalues lambda_e of M_ss = Y^T m Y) 15 to 200 times below mu, yet the wall holds them
with mu's stiffness, so there it rings sqrt(mu / lambda_e) times faster than in an average direction
(a jelly half over a ledge: 2,000 rad/s at |s| = 4.4 against omega = 200), and a load that touches
them sets s racing at thousands of standard deviations a second, which the steps must follow
(trajectory.latent_substeps). Each such direction gets the inertia that lifts it to MASS_FLOOR mu:

    T = 1/2 sum m |x_dot|^2 + 1/2 s_dot^T A s_dot,   A = V diag(max(0, MASS_FLOOR mu - lambda_e)) V^T

(M_ss = V diag(lambda) V^T at rest), a constant matrix, so the equations of motion keep their form and
energy stays conserved; directions that move at least MASS_FLOOR mu are left as they are, and the centre
of mass and the momenta do not see A (the deformation does not move the centre of mass).

Mirror planes: the decoder and its surface samples are not mirror-symmetric, so on a symmetric body
its modes are lopsided, and a flat landing excites them unevenly (unequal contact masses put the
pressure off centre: the body tilts; friction on unequal slip: it drifts and turns). A body with the
mirror group G (``mirror.py``: reflections g(x) = c + g (x - c) across vertical planes, |G| = 1, 2, 4)
gets one block s_g of k coordinates per g (k_q = k |G|) and the mirrored deformation

    y(s) = x + sum_g g [Y(g x) s_g + 1/2 Z(g x)[s_g, s_g]]         (quadratic expansion)
    y(s) = x + h sum_g g (F(z(s_g), g x) - F(z(0), g x))           (the network)

at every point x (Y, Z: the decoder's field of one block), the rigid part removed as before. Then
y(s) at g(x) is g(y(s') at x) with s' the blocks permuted by g: the coordinates of a symmetric body
are symmetric, with symmetric mass points (``mass_points.py``) so are its mass matrix, potential and
forces, and a body dropped flat stays symmetric (mirror-equivariance; G = {1} is the map above, bit
for bit). Drawn points follow the same sum of the mirrored skinned motions (|G| skinning passes).
What it costs and what it fixes: docs/physics.md, mirror symmetry.
"""

import collections
import copy
import dataclasses
import functools
import hashlib
import math
import threading

import numpy as np
import torch
from scipy.spatial import cKDTree

from .articulation import Joints, match_parts, matching_hessian
from .kinematics import MASS, KinematicMap, forward_jacobian, rows_at
from .mirror import MirrorGroup
from .model import NeuROKModel, ObjectShape, shape_tensors
from .options import EXPANSIONS
from .reduction import Subspace
from .rigid import posed_jacobian, posed_mass_terms
from .rotation import body_angular_velocity, exp_so3
from .skinning import (DRAWN_DTYPE, Skinning, channels, deform, displaced_by, dual_quaternion_moves, query_motions,
                       skinning)
from .taylor import coefficients, differences_lanes, first_order


WALL_MARGIN = 2.5  # prior standard deviations beyond sqrt(k_q) where the wall takes over (weights without a calibrated one)
MASS_FLOOR = 0.25  # of mu: the least inertia of a reduced direction (module docstring), so its wall rings at most twice as fast
RETURN_ITERATIONS = 3  # of the plastic return to the yield surface (flow)
CONDENSE_TOLERANCE = 1e-12  # singular values below this share of the largest carry no mass point
ATTACHED_KEPT = 16  # point sets a build keeps skinned for its maps (a live grab attaches one each)
JOINTS = ("joint first", "joint second")  # an articulated body's joint points, carried by either part
_ATTACHING = threading.Lock()  # Blender solves on a thread while live mode may attach on the main one


def wall_radius(reduced_size: int, margin: float = WALL_MARGIN) -> float:
    """S = sqrt(k_q) + margin: where the wall takes over, the edge of the prior's typical set in k_q
    dimensions (WALL_MARGIN), or where a model's training posteriors lie (its calibrated margin)."""
    return float(np.sqrt(reduced_size)) + margin


def inertia_floor(rest_mass, mean_mass):
    """A = V diag(max(0, MASS_FLOOR mu - lambda)) V^T (B, k, k) for M_ss = V diag(lambda) V^T (B, k, k) and
    mu (B,): the inertia that lifts every direction of M_ss to at least MASS_FLOOR mu (module docstring)."""
    eigenvalues, vectors = torch.linalg.eigh(rest_mass)
    lift = (MASS_FLOOR * mean_mass[:, None] - eigenvalues).clamp(min=0.0)
    return vectors @ (lift[..., None] * vectors.transpose(-1, -2))


class DecoderMotions:
    """m(s): the network's per-query rotation vectors and displacements (B, Q, 3) each, model units."""

    def __init__(self, model: NeuROKModel, shape: ObjectShape, subspace: Subspace, dtype):
        # the engine differentiates in q only: a frozen model in dtype is used as it is, another copied
        frozen = not any(p.requires_grad for p in model.parameters())
        self.model = model if frozen and next(model.parameters()).dtype == dtype else \
            copy.deepcopy(model).to(dtype).requires_grad_(False)
        features, self.query_features, self.queries = shape_tensors(self.model, shape, dtype=dtype)
        with torch.no_grad():
            self.prior_mean, self.tokens = self.model.prior(features)
        self.basis = subspace.basis.to(dtype)

    def __call__(self, s):
        z = self.prior_mean + torch.einsum("bi,ilc->blc", s, self.basis)
        return self.model.motions(z, self.tokens, self.query_features)


class QuadraticMotions:
    """m(s) = m(0) + A s + 1/2 B[s, s], the second-order expansion of ``DecoderMotions`` at s = 0
    (``order=1``: m(0) + A s), held in ``dtype``.

    The full expansion is taken by finite differences of the network in float64 (``taylor``, its
    (k + 1)(k + 2) / 2 evaluations LANES at a time; the mixed second derivatives, one-sided, a few 1e-4
    off), far quicker than a nested forward mode, whose elementwise operations torch runs through
    Python; the first order alone exactly by reverse mode (``taylor.first_order``) in the weights'
    precision, which needs no float64 copy of the network. The dynamics are then exactly those of this
    polynomial map, whatever its rounding."""

    LANES = 64  # evaluations a batch: the decoder's activations of a batch stay under 100 MB

    def __init__(self, model: NeuROKModel, shape: ObjectShape, subspace: Subspace, dtype, order: int = 2):
        self._source = (model, shape, subspace, dtype)
        k = subspace.size
        if order == 2:
            network = DecoderMotions(model, shape, subspace, torch.float64)
            with torch.no_grad():
                values = torch.cat([torch.cat(network(lanes), -1)
                                    for lanes in differences_lanes(k).split(self.LANES)])
            m0, first, second = coefficients(values, k)
        else:
            network = DecoderMotions(model, shape, subspace, next(model.parameters()).dtype)
            m0, first = first_order(lambda s: torch.cat(network(s), -1), k, network.basis.dtype)
            second = None
        self.queries = network.queries.to(dtype)
        self.m0, self.first = m0.to(dtype), first.to(dtype)
        self.second = None if second is None else second.to(dtype)  # (Q, 6, k, k)

    @functools.cached_property
    def exact(self) -> DecoderMotions:
        """The network this expands, in ``dtype`` (to measure the expansion against)."""
        return DecoderMotions(*self._source)

    def __call__(self, s):
        m = self.m0 + torch.einsum("qci,bi->bqc", self.first, s)
        if self.second is not None:
            m = m + 0.5 * torch.einsum("qcij,bi,bj->bqc", self.second, s, s)
        return m[..., :3], m[..., 3:]


class NeuralBodyMap(KinematicMap):
    """One body (B = 1) on the learned coordinates of ``model`` for ``shape``; with ``mirrors`` (the mesh's
    ``mirror.MirrorGroup``, world space) one block of ``subspace.size`` coordinates per reflection.
    With the quadratic expansion and ``condense``, the mass points become the fewest that carry the
    same dynamics (``_condense_mass_points``). ``order=1`` keeps the quadratic expansion's first
    order only: enough for ``rest_motion``, at a fraction of the build (NeuROK.body's probe).
    ``mass_parts`` (P,): the loose part each mass point belongs to, when known (``material_points``);
    else that of its nearest vertex. With ``joints``, an articulated body (``articulation.py``);
    ``wall_margin``: where its wall stands (``wall_radius``)."""

    def __init__(self, model: NeuROKModel, shape: ObjectShape, subspace: Subspace, mass_points, masses,
                 frequency: float, dtype=torch.float64, expansion: str = "quadratic", yield_strain: float | None = None,
                 mirrors: MirrorGroup | None = None, condense: bool = True, order: int = 2,
                 joints: Joints | None = None, wall_margin: float = WALL_MARGIN, mass_parts=None):
        super().__init__()
        if expansion not in EXPANSIONS:
            raise ValueError(f"expansion must be one of {', '.join(EXPANSIONS)}, got {expansion!r}")
        self.shape = shape
        self.motions = DecoderMotions(model, shape, subspace, dtype) if expansion == "exact" else \
            QuadraticMotions(model, shape, subspace, dtype, order)
        self.queries = self.motions.queries
        self.dual_quaternion = model.config.dual_quaternion
        self.neighbours = model.config.neighbours
        self.mass_points = torch.as_tensor(np.asarray(mass_points), dtype=dtype)[None]
        self.masses = torch.as_tensor(np.asarray(masses), dtype=dtype)[None]
        self.center = (self.masses[0, :, None] * self.mass_points[0]).sum(0) / self.masses.sum()
        self.orientation = torch.eye(3, dtype=dtype)[None]
        self.omega2 = (2 * np.pi * frequency) ** 2
        self.mirrors = mirrors if mirrors is not None else MirrorGroup.identity()
        self.block = subspace.size  # coordinates of one reflection's block s_g
        k = self.block * self.mirrors.size
        self.rigid_dofs = torch.cat([torch.ones(6, dtype=torch.bool), torch.zeros(k, dtype=torch.bool)])
        self.scale = torch.tensor(shape.scale, dtype=dtype)
        arms = self.mass_points[0] - self.center
        m = self.masses[0]
        inertia = torch.einsum("p,pk,pk->", m, arms, arms) * torch.eye(3, dtype=dtype) - torch.einsum("p,pi,pj->ij", m, arms, arms)
        self._inverse_inertia = torch.linalg.inv(inertia)
        self._frame = None  # the rigid part of the raw quadratic field at the mass points (attach)
        self._skins = {}  # point-set name -> (each mirror image's skinning, the set's quadratic field)
        self._attached = collections.OrderedDict()  # the same, by the points from the centre (shared by with_material)
        self._expanded = (None, None, None)  # (q, r, r_s) of the mass points at the last mass_terms
        self._part_images = None  # (|G|, parts): the part each reflection maps a part onto
        labels = nearest_parts(shape.to_model(self.mass_points[0].numpy()), shape) if mass_parts is None \
            else np.asarray(mass_parts)
        self.parts = torch.as_tensor(labels) if joints is not None else None  # articulated: the mass points' parts
        self.attach(MASS, self.mass_points, parts=labels)
        # dy/ds at rest (B, P, 3, k) at the sampled mass points (before they are condensed)
        self.rest_motion = self.jacobian(self.rest_coordinates(), MASS)[1][..., 6:]
        rest_mass = torch.einsum("bpik,bp,bpil->bkl", self.rest_motion, self.masses, self.rest_motion)  # M_ss at rest
        self.wall_mass = rest_mass.diagonal(dim1=-2, dim2=-1).sum(-1) / max(k, 1)
        self.mass_floor = inertia_floor(rest_mass, self.wall_mass)
        self.wall_radius = wall_radius(k, wall_margin)
        self.yield_strain = yield_strain
        self.gyration = torch.sqrt(torch.einsum("p,pk,pk->", m, arms, arms) / m.sum())  # |xbar - c|_m
        self._extent = (self.mass_points.amax(1) - self.mass_points.amin(1)).norm(dim=-1)
        if condense and self._skins[MASS][1] is not None:
            self._condense_mass_points()
        if joints is not None:
            self._attach_joints(joints)
        self.set_plastic_rest(torch.zeros(1, k, dtype=dtype))

    def with_material(self, frequency: float, yield_strain: float | None, shift=None,
                      joint_frequency: float | None = None) -> "NeuralBodyMap":
        """A map on the same coordinates with another material, at rest: R_ref = I, s_p = 0, and moved
        by ``shift`` (3,) m (a copy of the mesh elsewhere: the fields are in the model's units, the
        same wherever the mesh stands). The build (expansion, point fields) is shared, read-only; the
        attached point sets are its own. An articulated body's joints hold at ``joint_frequency``
        (default ``frequency``): their springs weigh (joint_frequency / frequency)^2 next to the
        parts', so a softer material bends its parts, not its joints apart."""
        other = copy.copy(self)
        other.point_sets, other._skins = dict(self.point_sets), dict(self._skins)
        if shift is not None and np.any(shift):
            moved = torch.as_tensor(np.asarray(shift, dtype=np.float64), dtype=self.dtype)
            other.shape = dataclasses.replace(self.shape, center=self.shape.center + shift)
            other.mirrors = MirrorGroup(self.mirrors.center + shift, self.mirrors.signs)
            other.mass_points, other.center = self.mass_points + moved, self.center + moved
            other.point_sets = {name: points + moved for name, points in self.point_sets.items()}
        other.orientation = torch.eye(3, dtype=self.dtype)[None]
        other.omega2 = (2 * np.pi * frequency) ** 2
        if self.parts is not None:
            other.joint_weights = self.joint_masses * (1.0 if joint_frequency is None else (joint_frequency / frequency) ** 2)
        other.yield_strain = yield_strain
        other._expanded = (None, None, None)
        other.set_plastic_rest(torch.zeros(1, self.reduced_size, dtype=self.dtype))
        return other

    def rest_coordinates(self):
        return torch.cat([self.center, torch.zeros(3 + self.reduced_size, dtype=self.dtype)])[None]

    @property
    def extent(self):
        return self._extent

    def _condense_mass_points(self):
        """Replace the mass points by the fewest that carry the same dynamics (quadratic expansion).

        Each mass point enters the engine through phi_i = (r_i, Y_i, Z_i), its rest offset from the
        centre of mass and its field y(s) = c + r + Y s + 1/2 Z[s, s] (B = 1), and every mass-weighted
        sum the engine takes (M, the Coriolis and centrifugal terms, the springs, the strain, drag) is
        bilinear in phi, so it depends on the points only through their mass M, first moment M phibar
        and G = sum m (phi - phibar)(phi - phibar)^T; for an articulated body (``parts``), each
        part's own, since its shape matching sums over the part (``articulation.py``). With
        sqrt(m) (phi - phibar) = U S V^T of rank r, the 2 r points phibar +- S_j V_j sqrt(r / M), each
        of mass M / (2 r), have the same mass and moments: the same T, V and forces for every q,
        q_dot. r <= 3 (1 + k + k (k + 1) / 2), less when mirror blocks leave Z sparse, against about
        a thousand samples (phibar = 0 over the whole body: the mean-axis frame); a set already that
        small is kept. The condensed points carry the mass but do not lie on the body: draw the body
        through other point sets.
        """
        _, (first, second) = self._skins[MASS]
        count, k = self.mass_points.shape[1], self.reduced_size
        offsets = self.mass_points[0] - self.center
        phi = torch.cat([offsets[..., None], first[0], second[0].reshape(count, 3, k * k)], -1).reshape(count, -1)
        labels = torch.zeros(count, dtype=torch.long) if self.parts is None else self.parts
        kept, masses, parts = [], [], []
        for part in labels.unique().tolist():
            members = labels == part
            mass, m = self.masses[0, members].sum(), self.masses[0, members]
            mean = (m[:, None] * phi[members]).sum(0) / mass
            spread = m.sqrt()[:, None] * (phi[members] - mean)
            used = spread.abs().amax(0) > 0  # mirror blocks leave most of Z zero
            _, singular, rows = torch.linalg.svd(spread[:, used], full_matrices=False)
            rank = int((singular > CONDENSE_TOLERANCE * singular[0]).sum()) if len(singular) else 0
            if rank == 0:  # every point alike: one at their mean carries them
                kept.append(mean[None])
                masses.append(mass[None])
            elif 2 * rank >= int(members.sum()):
                kept.append(phi[members])
                masses.append(m)
            else:
                half = torch.zeros(rank, phi.shape[1], dtype=phi.dtype)
                half[:, used] = singular[:rank, None] * rows[:rank] * torch.sqrt(rank / mass)
                kept.append(torch.cat([mean + half, mean - half]))
                masses.append(torch.full((2 * rank,), float(mass) / (2 * rank), dtype=phi.dtype))
            parts.append(torch.full((len(kept[-1]),), part, dtype=torch.long))
        condensed = torch.cat(kept)
        if len(condensed) >= count:
            return
        condensed = condensed.reshape(-1, 3, 1 + k + k * k)
        self.mass_points = (self.center + condensed[..., 0])[None]
        self.masses = torch.cat(masses)[None]
        self.parts = None if self.parts is None else torch.cat(parts)
        field = (condensed[None, ..., 1:1 + k].contiguous(), condensed[None, ..., 1 + k:].reshape(1, -1, 3, k, k).contiguous())
        self._skins[MASS] = (None, field)  # no network skinning: the condensed points are not on the body

    def _attach_joints(self, joints: Joints):
        """The joint springs (``articulation.py``): each joint point attached twice, as a point of either
        part (JOINTS), with the lighter part's mass spread over its pair's points. A body with mirror
        planes gets their images too (between the reflected parts), as its mass points do: its springs
        are then symmetric. The parts are numbered afresh over those that carry mass points (a sliver
        may carry none: it has no shape to keep)."""
        if self.mirrors.size > 1:
            reflected = self._reflected_parts()
            joints = Joints(np.concatenate(self.mirrors.images(joints.points)),
                            *(np.concatenate([reflected[g][ends] for g in range(self.mirrors.size)])
                              for ends in (joints.first, joints.second)))
        present, self.parts = torch.unique(self.parts, return_inverse=True)
        self.part_count = len(present)
        part_mass = torch.zeros(len(present), dtype=self.dtype).index_add_(0, self.parts, self.masses[0])
        number = np.full(max(int(present.max()), int(joints.first.max(initial=0)), int(joints.second.max(initial=0))) + 1, -1)
        number[present.numpy()] = np.arange(len(present))
        first, second = number[joints.first], number[joints.second]
        held = (first >= 0) & (second >= 0)
        points, first, second = torch.as_tensor(joints.points[held], dtype=self.dtype)[None], first[held], second[held]
        for name, parts in zip(JOINTS, (joints.first[held], joints.second[held])):
            self.attach(name, points, parts=parts)
        pair = np.minimum(first, second) * len(present) + np.maximum(first, second)
        _, which, sizes = np.unique(pair, return_inverse=True, return_counts=True)
        self.joint_pairs = len(sizes)
        lighter = torch.minimum(part_mass[first], part_mass[second])
        self.joint_masses = (lighter / torch.as_tensor(sizes[which], dtype=self.dtype))[None]
        self.joint_weights = self.joint_masses  # their springs' share next to the parts' (with_material)

    @property
    def reduced_size(self) -> int:
        return self.n_dof - 6

    @property
    def has_fields(self) -> bool:
        """Whether its point sets get quadratic fields (the expansion; the network gives none)."""
        return self._skin(MASS)[1] is not None

    def attach(self, name, points, parts=None, output=False):
        """Each point follows the query points of its part: ``parts`` (P,) when known (the mesh's own
        vertices), else the part of its nearest mesh vertex.

        With the quadratic expansion, points the engine differentiates (``output=False``: mass,
        contact, load points) get their own second-order expansion y(s) = xbar + Y s + 1/2 Z[s, s],
        so their Jacobians and mass sums are closed forms (``rigid.posed_*``); output points (a mesh
        drawn every frame) follow dual-quaternion skinning of the quadratic motions instead, which
        agrees with it to second order and needs no (V, 3, k, k) table.

        Under mirrors, each point is skinned at each of its images g(x) (parts: those given for the
        identity, the image's nearest vertex's for the others), and the field is the block-diagonal
        sum over g of g Y(g x), g Z(g x) (module docstring).
        """
        if name in self._skins and torch.equal(self.points(name), points):  # the same points again
            return
        super().attach(name, points)
        key = (output, None if parts is None else np.asarray(parts).tobytes(),
               shape_digest(points[0].detach().numpy(), self.center.numpy(), float(self.shape.scale)))
        with _ATTACHING:  # the same points on this build's other maps (with_material) are skinned once
            if key not in self._attached:
                self._attached[key] = self._skin_points(points, parts, output)
                while len(self._attached) > ATTACHED_KEPT:
                    self._attached.popitem(last=False)
            self._attached.move_to_end(key)
            self._skins[name] = self._attached[key]

    def _skin_points(self, points, parts, output):
        """``attach``'s work: each mirror image's skinning and, for engine points, their field."""
        zero = torch.zeros(self.block, dtype=self.dtype)
        images = []
        for index in range(self.mirrors.size):
            image = self.mirrors.reflect(points[0].detach(), index)
            model_points = (image.numpy() - self.shape.center) / self.shape.scale
            if parts is None:
                image_parts = nearest_parts(model_points, self.shape)
            else:  # the reflected part: a point between two parts keeps the one it was given
                image_parts = np.asarray(parts) if index == 0 else self._reflected_parts()[index][parts]
            points_t = torch.as_tensor(model_points, dtype=DRAWN_DTYPE if output else self.dtype)
            skin = skinning(model_points, self.shape.queries.points, image_parts, self.shape.query_parts,
                            self.neighbours)
            with torch.no_grad():  # F(z(0)) at these points, subtracted from every F(z(s))
                if output:  # drawn only: blended by a sparse product a block of rows a frame, in DRAWN_DTYPE,
                    # each block with its points' channels and their motion at rest (``_drawn``)
                    motions = query_motions(self.queries, *self.motions(zero[None]), self.dual_quaternion).to(DRAWN_DTYPE)
                    blocks = []
                    for rows, block in skin.drawn(len(self.shape.queries.points)):
                        at = channels(points_t[rows])
                        blocks.append((rows, block, (at, self._drawn_moves(block.blended(motions), at))))
                    rest = torch.cat([points_t[rows] + torch.stack(at_rest, -1) for rows, _, (_, at_rest) in blocks], 1)
                    skin = blocks
                else:
                    rest = self._move(zero[None], points_t, skin)
            images.append((points_t, skin, rest))
        field = None
        if isinstance(self.motions, QuadraticMotions) and not output:
            first, second = self._block_field(*self._image_fields(images))
            if self._frame is None:  # the mass points come first: their field fixes the floating frame
                self._frame = (self._rigid_part(first), self._rigid_part(second))
            arms = points - self.center
            field = (first - self._rigid_motion(arms, *self._frame[0]), second - self._rigid_motion(arms, *self._frame[1]))
        return images, field

    def _reflected_parts(self):
        """(|G|, parts): the part each reflection maps each of the mesh's parts onto."""
        if self._part_images is None:
            labels = self.shape.vertex_parts
            first = np.unique(labels, return_index=True)[1]  # a vertex of each part, in the parts' order
            self._part_images = labels[self.mirrors.vertex_images(self.shape.to_world(self.shape.vertices), first)]
        return self._part_images

    def _image_fields(self, images):
        """Each mirror image's Y_g = d y_g / d s_g (1, P, 3, k) and Z_g (1, P, 3, k, k), y_g = g h F(z(s_g), g x),
        all images at once by finite differences (``taylor``): every image's term is the same function
        of its own block s_g, so the derivatives of their stacked points in one s are each image's in
        its block."""
        points = torch.cat([p for p, _, _ in images])
        skin = Skinning(torch.cat([k.index for _, k, _ in images]), torch.cat([k.weight for _, k, _ in images]))
        order = 1 if self.motions.second is None else 2
        values = query_motions(self.queries, *self.motions(differences_lanes(self.block, order, self.dtype)),
                               self.dual_quaternion)
        # displacements, not positions: the differences' rounding is then that of the motion, not of x
        moves = displaced_by(skin.blended(values), points, self.dual_quaternion)
        _, first, second = coefficients(self.scale * moves, self.block, order)
        if second is None:
            second = first.new_zeros(*first.shape, self.block)
        sizes = [len(p) for p, _, _ in images]
        signs = [torch.as_tensor(self.mirrors.signs[g], dtype=self.dtype) for g in range(len(images))]
        return ([(y * sign[:, None])[None] for y, sign in zip(first.split(sizes), signs)],
                [(z * sign[:, None, None])[None] for z, sign in zip(second.split(sizes), signs)])

    def _reflect_vectors(self, index, u):
        """g u for the ``index``-th reflection of vectors u (..., 3); the identity returns u itself."""
        return u if index == 0 else u * torch.as_tensor(self.mirrors.signs[index], dtype=u.dtype)

    def _block_field(self, firsts, seconds):
        """The blocks' fields (B, P, 3, k) and (B, P, 3, k, k) as one: Y side by side, Z block-diagonal."""
        if len(firsts) == 1:
            return firsts[0], seconds[0]
        k = self.block
        second = seconds[0].new_zeros(*seconds[0].shape[:3], self.reduced_size, self.reduced_size)
        for index, block in enumerate(seconds):
            second[..., index * k:(index + 1) * k, index * k:(index + 1) * k] = block
        return torch.cat(firsts, -1), second

    def _mirrored(self, s, images):
        """sum_g g h (F(z(s_g), g x) - F(z(0), g x)) (B, P, 3): the raw mirrored displacement, world units."""
        k, total = self.block, None
        for index, (model_points, skin, rest) in enumerate(images):
            moved = self._move(s[:, index * k:(index + 1) * k], model_points, skin)
            term = self._reflect_vectors(index, self.scale * (moved - rest))
            total = term if total is None else total + term
        return total

    def _rigid_part(self, u):
        """(t, w) of the infinitesimal rigid motion t + w x r closest to the displacements u (B, P, 3, ...)
        of the mass points in the mass-weighted sense: t = sum m u / M, w = I^-1 sum m r x u."""
        m = self.masses[0]
        arms = (self.mass_points[0] - self.center).reshape(-1, 3, *([1] * (u.dim() - 3)))
        t = torch.einsum("p,bpi...->bi...", m, u) / m.sum()
        moment = torch.einsum("p,bpi...->bi...", m, torch.cross(arms[None].expand_as(u), u, dim=2))
        return t, torch.einsum("ij,bj...->bi...", self._inverse_inertia, moment)

    @staticmethod
    def _rigid_motion(arms, t, w):
        """t + w x r at the points with arms r (B, P, 3), for t, w (B, 3, ...): (B, P, 3, ...)."""
        extra = w.dim() - 2
        r = arms.reshape(*arms.shape, *([1] * extra))
        return t[:, None] + torch.cross(w[:, None].expand(-1, r.shape[1], *w.shape[1:]), r.expand(-1, -1, *w.shape[1:]), dim=2)

    def _skin(self, name):
        if name not in self._skins:
            raise KeyError(f"no points attached to the map as {name!r} (KinematicMap.attach)")
        return self._skins[name]

    def _move(self, s, model_points, skin, motions=None):
        rotation, displacement = (motions or self.motions)(s)
        return deform(self.queries, rotation, displacement, model_points, skin, self.dual_quaternion)

    def deformed(self, s, name):
        """y(s) (B, P, 3): the points attached as ``name`` moved by the deformation alone, world units, body at rest pose,
        without its rigid part (mean-axis frame: sum m u = 0 and sum m r x u = 0 over the mass points)."""
        images, field = self._skin(name)
        if field is not None:
            return self._expansion(name, s)[0] + self.center
        if self._blocks(name) is not None:
            return self._drawn(s, name)
        points = self.points(name)
        return points + self._mirrored(s, images) - self._rigid_motion(points - self.center, *self._frame_motion(s))

    def _frame_motion(self, s):
        """(t, w) (B, 3) each: the rigid part of the raw mirrored displacement at s, taken out of a point
        set without a field of its own (``deformed``)."""
        if self._frame is not None:  # quadratic expansion, drawn points: the frame's own expansion
            (t1, w1), (t2, w2) = self._frame
            return (torch.einsum("bik,bk->bi", t1, s) + 0.5 * torch.einsum("bikl,bk,bl->bi", t2, s, s),
                    torch.einsum("bik,bk->bi", w1, s) + 0.5 * torch.einsum("bikl,bk,bl->bi", w2, s, s))
        return self._rigid_part(self._mirrored(s, self._skin(MASS)[0]))  # the network: the mass points' own

    def _blocks(self, name):
        """The mirror images of a point set skinned in blocks to be drawn (``Skinning.drawn``), else None."""
        images, field = self._skin(name)
        return images if field is None and images and isinstance(images[0][1], list) else None

    def _drawn(self, s, name, pose=None):
        """``deformed`` for drawn points, or with ``pose`` = (p (B, 3), R (B, 3, 3)) ``embed``'s
        p + R (y(s) - c): one block of rows at a time through every mirror image (each image's query
        motions once) and the pose, channel by channel, the same sums with every temporary a block's."""
        images, points, (t, w), k = self._blocks(name), self.points(name), self._frame_motion(s), self.block
        values = [query_motions(self.queries, *self.motions(s[:, index * k:(index + 1) * k]), self.dual_quaternion)
                  .to(DRAWN_DTYPE) for index in range(len(images))]
        signs = [[float(sign) * self.scale for sign in self.mirrors.signs[index]] for index in range(len(images))]
        out = points.new_empty(s.shape[0], points.shape[1], 3)
        for block, (rows, *_) in enumerate(images[0][1]):
            total = [0.0, 0.0, 0.0]  # sum_g g h (F(z(s_g), g x) - F(z(0), g x)), by channel
            for index, (_, blocks, _) in enumerate(images):
                _, skin, (at_points, at_rest) = blocks[block]
                moves = self._drawn_moves(skin.blended(values[index]), at_points)
                total = [sum_ + sign * (move - rest) for sum_, sign, move, rest in zip(total, signs[index], moves, at_rest)]
            at = points[:, rows]
            shape = at + torch.stack(total, -1) - self._rigid_motion(at - self.center, t, w)
            out[:, rows] = shape if pose is None else pose[0][:, None] + (shape - self.center) @ pose[1].transpose(1, 2)
        return out

    def _drawn_moves(self, blend, points) -> list[torch.Tensor]:
        """x' - x by channel for drawn points x (3 channels) under their blend of query motions (..., V, C)."""
        return dual_quaternion_moves(channels(blend), points) if self.dual_quaternion else list(channels(blend))

    def _expansion(self, name, s, s_dot=None, index=None):
        """For points with a quadratic field: r = y(s) - c = xbar - c + (Y + 1/2 Z s) s, r_s = Y + Z s
        and, given s_dot, Z s_dot (B, P, 3, k): Z is contracted once per direction. With ``index``
        (B, I), of each body's points index[b] alone."""
        (first, second), points = self._skin(name)[1], self.points(name)
        if index is not None:
            first, second, points = rows_at(first, index), rows_at(second, index), rows_at(points, index)
        z_s = torch.einsum("bpikl,bl->bpik", second, s)
        r = points - self.center + torch.einsum("bpik,bk->bpi", first + 0.5 * z_s, s)
        return r, first + z_s, None if s_dot is None else torch.einsum("bpikl,bl->bpik", second, s_dot)

    def _against_second(self, weights):
        """sum_p w_p . Z_p (B, k, k) for vectors w (B, P, 3) at the mass points."""
        return torch.einsum("bpi,bpikl->bkl", weights, self._skin(MASS)[1][1])

    def embed(self, q, name):
        return self._posed(q, name, self.orientation)

    def _posed(self, q, name, orientation):
        """x = p + R (y(s) - c), R = R_ref exp(theta), for ``orientation`` R_ref (B, 3, 3)."""
        rotation = orientation @ exp_so3(q[:, 3:6])
        if self._blocks(name) is not None:
            return self._drawn(q[:, 6:], name, (q[:, :3], rotation))
        return q[:, None, :3] + (self.deformed(q[:, 6:], name) - self.center) @ rotation.transpose(1, 2)

    def frame(self, q, name):
        """(q, R_ref): one body's frames are drawn in one pass, the frames as the rows of its batch,
        where frame by frame each pass costs the same dozens of small operations (``draw``)."""
        return q, self.orientation

    def draw(self, frames, name):
        q, orientation = (torch.cat(parts) for parts in zip(*frames))
        return self._posed(q, name, orientation)[:, None]

    def jacobian(self, q, name, index=None):
        if self._skin(name)[1] is not None:
            r, r_s, _ = self._expansion(name, q[:, 6:], index=index)
            return posed_jacobian(self.orientation, q, r, r_s)
        if index is not None and self._blocks(name) is not None:  # drawn points: the picked ones alone
            return self._picked_jacobian(q, name, index, self.orientation, self.center, self.points(name))
        return super().jacobian(q, name, index)

    def _picked_jacobian(self, q, name, index, orientation, center, points):
        """x and J (B = 1) at the drawn points index[0] of ``name`` by forward mode, each point through
        its own K queries gathered (the blocks' sparse products carry no derivative), in the map's
        precision; ``orientation``, ``center`` and ``points`` this body's or those of a copy of it (a
        stack's row)."""
        rows = index[0]
        images = []
        for model_points, blocks, rest in self._blocks(name):
            size = blocks[0][0].stop - blocks[0][0].start  # the blocks' rows
            block, local = rows // size, rows % size
            picked = Skinning(blocks[0][1].index.new_empty(len(rows), blocks[0][1].index.shape[1]),
                              torch.empty(len(rows), blocks[0][1].weight.shape[1], dtype=self.dtype))
            for b in block.unique().tolist():  # the blocks the picked points lie in
                at = block == b
                picked.index[at] = blocks[b][1].index[local[at]]
                picked.weight[at] = blocks[b][1].weight[local[at]].to(self.dtype)
            images.append((model_points[rows].to(self.dtype), picked, rest[:, rows].to(self.dtype)))
        at = points[:, rows]

        def embed(qq):
            s = qq[:, 6:]
            shape = at + self._mirrored(s, images) - self._rigid_motion(at - center, *self._frame_motion(s))
            return qq[:, None, :3] + (shape - center) @ (orientation @ exp_so3(qq[:, 3:6])).transpose(1, 2)

        return forward_jacobian(q, embed)

    def mass_terms(self, q, q_dot):
        """The mass points' sums plus the inertia floor A on the reduced coordinates (module docstring)."""
        if not self.has_fields:
            terms = super().mass_terms(q, q_dot)
        else:
            r, r_s, r_ss_dot = self._expansion(MASS, q[:, 6:], q_dot[:, 6:])
            self._expanded = (q, r, r_s)  # the potential's gradient at the same q, next in a force evaluation
            terms = posed_mass_terms(self.orientation, q, q_dot, self.masses, r, r_s, r_ss_dot)
        floor = torch.nn.functional.pad(self.mass_floor, (6, 0, 6, 0))
        return dataclasses.replace(terms, mass_matrix=terms.mass_matrix + floor)

    def _joint_fields(self, s):
        """The joint springs' stretch y_a - y_b - (its plastic rest) (B, J, 3) and its Jacobian (B, J, 3, k)."""
        (ra, ra_s, _), (rb, rb_s, _) = (self._expansion(name, s) for name in JOINTS)
        return ra - rb - self.plastic_gap, ra_s - rb_s

    def set_plastic_rest(self, s_p):
        """s_p (B, k), and y(s_p) at the mass points, where the springs pull to (an articulated body's
        joints: their gap at s_p)."""
        self.plastic_rest = s_p
        self.plastic_shape = self.deformed(s_p, MASS)
        self._articulated_kept = (None, None)
        if self.parts is not None:
            self.plastic_gap = self._joint_gap(s_p)

    def _joint_gap(self, s):
        """y_a(x_j) - y_b(x_j) (B, J, 3): how far apart the two parts' motions carry each joint point."""
        return self.deformed(s, JOINTS[0]) - self.deformed(s, JOINTS[1])

    def _held(self, s):
        """What the springs stretch at s: y(s) at the mass points and, articulated, the joints' gap."""
        return self.deformed(s, MASS), None if self.parts is None else self._joint_gap(s)

    def _springs(self, shape, gap=None):
        """The springs' sum m |u|^2 (B,) from ``_held``: u = y(s) - y(s_p) at the mass points, or an
        articulated body's parts against their best rigid motions and its joints' stretch."""
        if self.parts is None:
            u = shape - self.plastic_shape
            return (self.masses[..., None] * u * u).sum((1, 2))
        return self._articulated_springs(self._matched(shape), gap - self.plastic_gap)

    def _articulated_springs(self, matched, stretch):
        """An articulated body's springs' sum (B,): its parts' matching and its joints' ``stretch``."""
        return matched.energy + (self.joint_weights[..., None] * stretch * stretch).sum((1, 2))

    def _matched(self, shape):
        """``articulation.match_parts`` of the mass points at ``shape`` against the plastic rest shape."""
        return match_parts(shape, self.plastic_shape, self.masses, self.parts, self.part_count)

    def _articulated(self, q, r):
        """(the parts' matching, the joints' stretch and its Jacobian) at q, the mass points at r = y - c:
        the last is kept, for the gradient and the Hessian of one step."""
        if self._articulated_kept[0] is not q:
            self._articulated_kept = (q, (self._matched(r + self.center), *self._joint_fields(q[:, 6:])))
        return self._articulated_kept[1]

    def potential(self, q):
        """V = 1/2 omega^2 (sum m |y(s) - y(s_p)|^2 + mu S^2 (|s| / S)^6) per body (module docstring);
        an articulated body's springs are its parts' shape matching and its joints
        (``articulation.py``)."""
        s = q[:, 6:]
        spring = self._springs(*self._held(s))
        return 0.5 * self._per_body(self.omega2, spring) * (spring + self.wall(s))

    def wall(self, s):
        """The wall's mu S^2 (|s| / S)^6 per body (B,) at the reduced coordinates s (B, k_q): the
        potential's term that keeps s where the decoder was trained (module docstring)."""
        radius = self.wall_radius
        return self.wall_mass * radius**2 * ((s * s).sum(1) / radius**2) ** 3

    def potential_gradient(self, q):
        """With the quadratic expansion: dV/ds = omega^2 (sum m u . (Y + Z s) + 3 mu |s|^4 s / S^4),
        u = y(s) - y(s_p), y(s) = xbar + Y s + 1/2 Z[s, s]; zero in the rigid coordinates. The network
        (exact) goes by autograd."""
        if not self.has_fields:
            return None
        s = q[:, 6:]
        r, r_s = self._expanded[1:] if self._expanded[0] is q else self._expansion(MASS, s)[:2]
        if self.parts is None:
            spring = torch.einsum("bp,bpi,bpik->bk", self.masses, r + self.center - self.plastic_shape, r_s)
        else:  # envelope theorem: the residual of the best rigid motion (articulation.py)
            matched, gap, gap_s = self._articulated(q, r)
            spring = torch.einsum("bp,bpi,bpik->bk", self.masses, matched.residual, r_s) + torch.einsum(
                "bp,bpi,bpik->bk", self.joint_weights, gap, gap_s)
        wall = 3 * self.wall_mass[:, None] * (s * s).sum(1, keepdim=True) ** 2 * s / self.wall_radius**4
        return torch.cat([torch.zeros_like(q[:, :6]), self._per_body(self.omega2, spring) * (spring + wall)], 1)

    def potential_hessian(self, q):
        """With the quadratic expansion: d2V/ds2 = omega^2 (sum m ((Y + Z s)^T (Y + Z s) + u . Z)
        + 3 mu / S^4 (|s|^4 1 + 4 |s|^2 s s^T)); zero in the rigid coordinates."""
        if not self.has_fields:
            return None
        s = q[:, 6:]
        r, r_s = self._expanded[1:] if self._expanded[0] is q else self._expansion(MASS, s)[:2]
        if self.parts is None:
            u = r + self.center - self.plastic_shape
            spring = torch.einsum("bp,bpik,bpil->bkl", self.masses, r_s, r_s)
        else:
            matched, gap, gap_s = self._articulated(q, r)
            u = matched.residual
            spring = matching_hessian(matched, self.masses, self.parts, r_s)
            curvature = [self._skin(name)[1][1] for name in JOINTS]
            spring = spring + torch.einsum("bp,bpik,bpil->bkl", self.joint_weights, gap_s, gap_s) + torch.einsum(
                "bpi,bpikl->bkl", self.joint_weights[..., None] * gap, curvature[0] - curvature[1])
        spring = spring + self._against_second(self.masses[..., None] * u)
        norm2 = (s * s).sum(1)[:, None, None]
        eye = torch.eye(s.shape[1], dtype=s.dtype)
        wall = 3 * self.wall_mass[:, None, None] / self.wall_radius**4 * (
            norm2**2 * eye + 4 * norm2 * s[:, :, None] * s[:, None, :])
        hessian = torch.zeros(q.shape[0], q.shape[1], q.shape[1], dtype=q.dtype)
        hessian[:, 6:, 6:] = self._per_body(self.omega2, spring) * (spring + wall)
        return hessian

    def strain(self, s):
        """e = |y(s) - y(s_p)|_m / |xbar - c|_m per body: the springs' RMS stretch over the radius of
        gyration (articulated: sqrt(their sum m |u|^2 / M) over it, ``_springs``)."""
        return self._strain_at(*self._held(s))

    def _strain_at(self, shape, gap=None):
        """``strain`` from ``_held(s)``, for a caller that holds it while s_p moves."""
        return self._strain_of(self._springs(shape, gap))

    def _strain_of(self, springs):
        """e from the springs' sum m |u|^2 (B,): sqrt(sum / M) over the radius of gyration."""
        return torch.sqrt(springs / self.masses.sum(1)) / self.gyration

    def flow(self, q):
        """Plastic return: s_p <- s - k (s - s_p) where e > e_y, with k = e_y / e for a linear map and
        refined by RETURN_ITERATIONS fixed-point steps k <- k e_y / e(k) for the curved one (the first
        guess lands 2 % off at e = 7 e_y). The springs hold 1/2 omega^2 M |xbar - c|_m^2 e^2 and the
        wall does not move, so the energy released is that of e_before^2 - e_after^2."""
        if self.yield_strain is None:  # never yields
            return super().flow(q)
        s = q[:, 6:]
        if self.parts is not None and self.has_fields:  # the next step's forces start at this q: its matching is kept for them
            matched, stretch, _ = self._articulated(q, self._expansion(MASS, s)[0])
            strain = self._strain_of(self._articulated_springs(matched, stretch))
            if not bool((strain > self.yield_strain).any()):
                return torch.zeros_like(strain)
        held = self._held(s)  # y(s): decoded once, only s_p moves below
        strain = first = self._strain_at(*held)
        if not bool((strain > self.yield_strain).any()):
            return torch.zeros_like(strain)
        start, kept = self.plastic_rest, torch.ones_like(strain)
        for _ in range(RETURN_ITERATIONS):
            kept = torch.clamp(kept * self.yield_strain / strain, max=1.0)
            self.set_plastic_rest(s - kept[:, None] * (s - start))
            strain = self._strain_at(*held)
        return 0.5 * self._per_body(self.omega2, first) * self.masses.sum(1) * self.gyration**2 * (first**2 - strain**2)

    @staticmethod
    def _per_body(value, like):
        """A material value as a factor of ``like`` (B, ...): a number as it is, one per body (B,) along B."""
        return value.reshape(-1, *([1] * (like.dim() - 1))) if torch.is_tensor(value) else value

    def snapshot(self):
        return self.orientation, self.plastic_rest

    def restore(self, snapshot):
        self.orientation = snapshot[0]
        self.set_plastic_rest(snapshot[1])

    def recenter(self, q, q_dot):
        """As the rigid map: R_ref <- R_ref exp(theta), theta <- 0, theta_dot <- body angular velocity."""
        omega = body_angular_velocity(q[:, 3:6], q_dot[:, 3:6])
        self.orientation = self.orientation @ exp_so3(q[:, 3:6])
        zeros = torch.zeros_like(omega)
        return (torch.cat([q[:, :3], zeros, q[:, 6:]], 1), torch.cat([q_dot[:, :3], omega, q_dot[:, 6:]], 1))

    def pose(self, q):
        return {"translation": q[:, :3], "rotation": self.orientation @ exp_so3(q[:, 3:6]), "reduced": q[:, 6:],
                "plastic_rest": self.plastic_rest}

    def chart_speed(self, q_dot):
        return float(q_dot[:, 3:6].norm(dim=1).max())

    def latent_speed(self, q_dot):
        return float(q_dot[:, 6:].norm(dim=1).max())


class NeuralBodyStack(NeuralBodyMap):
    """Several bodies' ``NeuralBodyMap`` (B = 1 each, quadratic expansion, the same number of learned
    coordinates) as the rows of one batch, for a scene: the posed sums (mass terms, Jacobians, the
    potential, its gradient and Hessian, the plastic flow) run once for all of them. The quadratic
    fields are contracted per field, not stacked: bodies of one shape share theirs (``attach``
    skins a shape once), and one product takes every such body's s at once, reading the field once;
    bodies of other shapes are contracted one by one, each field in turn. Each body keeps its own
    material (omega, yield strain, wall mass) and state (R_ref, s_p). The mass points (the
    condensation leaves a different number per shape) are padded with massless points of zero field.
    A point set without a field (a drawn mesh, a surface too large for its table) is moved by each
    body's own map. The bodies' maps are the stack's build: their own R_ref and s_p stay as they were."""

    def __init__(self, maps: list[NeuralBodyMap]):
        KinematicMap.__init__(self)
        if any(m.reduced_size != maps[0].reduced_size or not m.has_fields or m.parts is not None for m in maps):
            raise ValueError("stacked maps have the quadratic expansion, the same number of coordinates and "
                             "the elastic potential (not an articulated body's)")
        self.maps = maps
        self.parts = None
        count = max(m.mass_points.shape[1] for m in maps)
        pad = lambda t: torch.nn.functional.pad(t, [0, 0] * (t.dim() - 2) + [0, count - t.shape[1]])
        self.mass_points = torch.cat([pad(m.mass_points) for m in maps])
        self.masses = torch.cat([pad(m.masses) for m in maps])
        self.rigid_dofs = maps[0].rigid_dofs
        self.center = torch.stack([m.center for m in maps])[:, None]  # (B, 1, 3)
        self.orientation = torch.cat([m.orientation for m in maps])
        self.omega2 = torch.tensor([m.omega2 for m in maps], dtype=self.dtype)
        self.yield_strain = None if all(m.yield_strain is None for m in maps) else torch.tensor(
            [math.inf if m.yield_strain is None else m.yield_strain for m in maps], dtype=self.dtype)
        self.wall_mass = torch.cat([m.wall_mass for m in maps])
        self.mass_floor = torch.cat([m.mass_floor for m in maps])
        self.wall_radius = maps[0].wall_radius
        self.gyration = torch.stack([m.gyration for m in maps])
        self._extent = torch.cat([m.extent for m in maps])
        self._skins = {}
        self._stack_fields(MASS)
        self._expanded = (None, None, None)
        self.set_plastic_rest(torch.cat([m.plastic_rest for m in maps]))

    def _stack_fields(self, name):
        """The bodies' fields of ``name`` by field: [(rows, Y (P, 3, k), Z (P, 3, k, k))], or None
        when a body has none."""
        fields = [m._skin(name)[1] for m in self.maps]
        groups = None
        if all(f is not None for f in fields):
            by_field = {}
            for row, f in enumerate(fields):
                by_field.setdefault(id(f), (f, []))[1].append(row)
            groups = [(torch.tensor(rows), f[0][0], f[1][0]) for f, rows in by_field.values()]
        self._skins[name] = (None, groups)

    def rest_coordinates(self):
        return torch.cat([self.center[:, 0], torch.zeros(self.batch, 3 + self.reduced_size, dtype=self.dtype)], 1)

    # its rows are bodies with fields of their own, not frames of one: a frame is drawn as it comes
    frame, draw = KinematicMap.frame, KinematicMap.draw

    def attach(self, name, points, parts=None, output=False):
        """Each body's map attaches its row of ``points`` (B, P, 3), each point following its part there
        (``parts`` are one body's: not taken)."""
        if name in self._skins and torch.equal(self.points(name), points):
            return
        KinematicMap.attach(self, name, points)
        for row, m in enumerate(self.maps):
            m.attach(name, points[row:row + 1], output=output)
        self._stack_fields(name)

    def _expansion(self, name, s, s_dot=None, index=None):
        points = self.points(name) if index is None else rows_at(self.points(name), index)
        b, count, k = s.shape[0], points.shape[1], s.shape[1]
        parts = []  # per field: (its rows, its points' count, (Y + 1/2 Z s) s, Y + Z s, Z s_dot)
        for rows, first, second in self._skin(name)[1]:
            if index is None:  # one field for the rows: (P, 3, k[, k])
                contract = lambda t: torch.einsum("pikl,rl->rpik", second, t[rows])
            else:  # each row's own points of it: (R, I, 3, k[, k])
                first, second = first[index[rows]], second[index[rows]]
                contract = lambda t: torch.einsum("rpikl,rl->rpik", second, t[rows])
            z_s = contract(s)
            parts.append((rows, first.shape[-3], torch.einsum("rpik,rk->rpi", first + 0.5 * z_s, s[rows]),
                          first + z_s, None if s_dot is None else contract(s_dot)))
        if len(parts) == 1 and parts[0][1] == count:  # one shape for every body: nothing to scatter
            _, _, moved, r_s, z_dot = parts[0]
            return points - self.center + moved, r_s, z_dot
        r = points - self.center
        r_s = s.new_zeros(b, count, 3, k)
        z_dot = None if s_dot is None else s.new_zeros(b, count, 3, k)
        for rows, size, moved, r_s_part, z_dot_part in parts:  # a shape's mass points: as many as its field has
            r[rows, :size] += moved
            r_s[rows, :size] = r_s_part
            if s_dot is not None:
                z_dot[rows, :size] = z_dot_part
        return r, r_s, z_dot

    def _against_second(self, weights):
        contracted = weights.new_zeros(weights.shape[0], self.reduced_size, self.reduced_size)
        for rows, _, second in self._skin(MASS)[1]:
            contracted[rows] = torch.einsum("rpi,pikl->rkl", weights[rows, :second.shape[0]], second)
        return contracted

    def deformed(self, s, name):
        if self._skin(name)[1] is not None:
            return super().deformed(s, name)
        # bodies whose points of ``name`` share one skinning without a field (copies of one shape, moved:
        # ``attach`` skins them once) are moved together by the first one's map, each then shifted by
        # its centre's offset from the first's, y_b = y_first(s_b) + c_b - c_first: one pass of the
        # query motions and blends for all of them
        groups = {}
        for row, m in enumerate(self.maps):
            images, field = m._skin(name)
            groups.setdefault(id(images) if field is None else (row,), []).append(row)
        moved = [None] * len(self.maps)
        for rows in groups.values():
            first = self.maps[rows[0]]
            together = first.deformed(s[rows], name) + (self.center[rows] - first.center)
            for at, row in enumerate(rows):
                moved[row] = together[at:at + 1]
        return torch.cat(moved)

    def jacobian(self, q, name, index=None):
        if self._skin(name)[1] is not None or index is None:
            return super().jacobian(q, name, index)
        parts = [m._picked_jacobian(q[row:row + 1], name, index[row:row + 1], self.orientation[row:row + 1],
                                    self.center[row], self.points(name)[row:row + 1]) for row, m in enumerate(self.maps)]
        return torch.cat([x for x, _ in parts]), torch.cat([j for _, j in parts])


def shape_digest(points: np.ndarray, origin, size: float) -> str:
    """A digest of points (P, 3) from ``origin`` to a billionth of ``size`` (m): the same for a copy of
    them moved with their origin, whatever the rounding of the move, and not for one scaled."""
    grid = np.round((np.asarray(points, np.float64) - origin) * (2**30 / max(size, 1e-30))).astype(np.int64)
    return hashlib.blake2b(grid.tobytes() + str(grid.shape).encode(), digest_size=16).hexdigest()


def nearest_parts(points: np.ndarray, shape: ObjectShape) -> np.ndarray:
    """The part of the shape's vertex nearest each point (a k-d tree); no search for a shape of one part."""
    parts = shape.vertex_parts
    if len(parts) and (parts == parts[0]).all():
        return np.full(len(points), parts[0])
    return parts[cKDTree(shape.vertices).query(points)[1]]
