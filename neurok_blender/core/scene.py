"""Several bodies in one solve: each keeps its own coordinates, material and conditions, and they
meet each other and the colliders through the one contact law (docs/physics.md, "Several bodies").

    results = simulate_scene([(vertices, faces, Conditions(...)), ...], model=NeuROK.load())

The bodies are the rows of one batch (``StackedMap``): every row is integrated with the same steps,
its coordinates padded to the longest row's with coordinates that nothing moves. Each body's contact
points meet the other bodies' meshes as moving colliders (``obstacles.BodySurfaces``), and the force
on a point pushes back on the body it met (``LagrangianSystem.reactions``).
"""

import dataclasses
from typing import Callable

import numpy as np
import torch

from .dynamics import Environment, LagrangianSystem
from .kinematics import MASS, KinematicMap, MassTerms
from .mesh import is_closed
from .neural import NeuralBodyMap, NeuralBodyStack
from .obstacles import BodySurfaces, Obstacles
from .rigid import RigidBodyMap
from .simulation import Body, SimulationResult, prepare
from .trajectory import rollout

SHARED = ("frames", "fps", "gravity", "ground_height", "integrator", "substeps", "sleep")  # one value per scene


class StackedMap(KinematicMap):
    """Maps of one body each (B = 1) as the rows of one batch. Row b has the coordinates of map b and
    zeros after them; a padding coordinate has unit mass and no force, so it stays at rest. The rigid
    bodies are merged into one batched RigidBodyMap, and learned maps of as many coordinates into one
    NeuralBodyStack (their closed forms then run once for all of them)."""

    def __init__(self, maps: list[KinematicMap]):
        super().__init__()
        for m in maps:
            if not (bool(m.rigid_dofs[:6].all()) and not bool(m.rigid_dofs[6:].any())):
                raise ValueError("each stacked map has six rigid coordinates first (translation, rotation)")
        rigid = [i for i, m in enumerate(maps) if isinstance(m, RigidBodyMap)]
        learned = {}  # maps with quadratic fields, by their number of coordinates
        for i, m in enumerate(maps):
            if isinstance(m, NeuralBodyMap) and m.has_fields and m.parts is None:  # articulated ones alone
                learned.setdefault(m.n_dof, []).append(i)
        stacked = [rows for rows in learned.values() if len(rows) > 1]
        merged = set(rigid).union(*stacked)
        self.groups = [([i], m) for i, m in enumerate(maps) if i not in merged]  # (rows, the map that moves them)
        self.groups += [(rows, NeuralBodyStack([maps[i] for i in rows])) for rows in stacked]
        if rigid:
            merged = RigidBodyMap(torch.cat([maps[i].centers for i in rigid]),
                                  torch.cat([maps[i].mass_points for i in rigid]),
                                  torch.cat([maps[i].masses for i in rigid]), maps[rigid[0]].dtype)
            merged.orientation = torch.cat([maps[i].orientation for i in rigid])
            self.groups.append((rigid, merged))
        order = [row for rows, _ in self.groups for row in rows]
        self.inverse = torch.argsort(torch.tensor(order))  # group-ordered rows back to the bodies' order
        self.sizes = [m.n_dof for m in maps]
        n = max(self.sizes)
        self.rigid_dofs = torch.arange(n) < 6
        self.mass_points, self.masses = _padded([m.mass_points for m in maps], [m.masses for m in maps])
        self.potentials = [m.potential(m.rest_coordinates()) is not None for _, m in self.groups]  # which groups have one
        self._split = []  # the last two (q, _parts(q))

    def _parts(self, q):
        """q (B, n) as each group's own coordinates. The same q gives the same tensors: a map keeps what
        it evaluated at its q (its mass terms' expansion, for the potential's gradient and Hessian)."""
        for kept, parts in self._split:
            if kept is q:
                return parts
        parts = [q[rows, :m.n_dof] for rows, m in self.groups]
        self._split = [(q, parts), *self._split[:1]]  # a state's q and q_dot
        return parts

    def _rows(self, parts):
        """Each group's tensors (len(rows), ...) back in the bodies' order."""
        return torch.cat(parts)[self.inverse]

    def _pad(self, t, dims=(-1,)):
        """Zeros after a row's own coordinates along ``dims``."""
        n = self.n_dof
        for dim in dims:
            pad = [0, 0] * (t.ndim - dim % t.ndim - 1) + [0, n - t.shape[dim]]
            t = torch.nn.functional.pad(t, pad)
        return t

    def rest_coordinates(self):
        return self._rows([self._pad(m.rest_coordinates()) for _, m in self.groups])

    @property
    def extent(self):
        return self._rows([torch.as_tensor(m.extent, dtype=self.dtype).reshape(-1) for _, m in self.groups])

    def attach(self, name, points, parts=None, output=False):
        super().attach(name, points)
        for rows, m in self.groups:
            m.attach(name, points[rows], output=output)

    def points(self, name):
        return self.mass_points if name == MASS else super().points(name)

    def embed(self, q, name):
        if name == MASS:
            count = self.mass_points.shape[1]
            return self._rows([_padded([x[None] for x in m.embed(r, MASS)], count=count)
                               for (_, m), r in zip(self.groups, self._parts(q))])
        return self._rows([m.embed(r, name) for (_, m), r in zip(self.groups, self._parts(q))])

    def jacobian(self, q, name, index=None):
        parts = [m.jacobian(r, name, None if index is None else index[rows])
                 for (rows, m), r in zip(self.groups, self._parts(q))]
        return self._rows([x for x, _ in parts]), self._rows([self._pad(j) for _, j in parts])

    def mass_terms(self, q, q_dot):
        terms = [m.mass_terms(r, v) for (_, m), r, v in zip(self.groups, self._parts(q), self._parts(q_dot))]
        matrices = []
        for term, (_, m) in zip(terms, self.groups):
            k = m.n_dof
            matrix = self._pad(term.mass_matrix, (-1, -2))
            scale = term.mass_matrix.diagonal(dim1=-2, dim2=-1).mean(-1)
            matrix[:, k:, k:] += scale[:, None, None] * torch.eye(self.n_dof - k, dtype=self.dtype)  # padding: unit inertia
            matrices.append(matrix)
        return MassTerms(mass_matrix=self._rows(matrices),
                         quadratic=self._rows([self._pad(t.quadratic) for t in terms]),
                         kinetic_gradient=self._rows([self._pad(t.kinetic_gradient) for t in terms]),
                         moment=self._rows([self._pad(t.moment) for t in terms]))

    def potential(self, q):
        if not any(self.potentials):
            return None
        return self._rows([m.potential(r) if has else torch.zeros(len(rows), dtype=q.dtype)
                           for (rows, m), r, has in zip(self.groups, self._parts(q), self.potentials)])

    def potential_gradient(self, q):
        parts = []
        for (rows, m), r, has in zip(self.groups, self._parts(q), self.potentials):
            if not has:
                parts.append(torch.zeros(len(rows), self.n_dof, dtype=q.dtype))
                continue
            gradient = m.potential_gradient(r)
            if gradient is None:  # a map without a closed form: the engine differentiates the sum
                return None
            parts.append(self._pad(gradient))
        return self._rows(parts)

    def potential_hessian(self, q):
        parts = []
        for (rows, m), r, has in zip(self.groups, self._parts(q), self.potentials):
            if not has:
                parts.append(torch.zeros(len(rows), self.n_dof, self.n_dof, dtype=q.dtype))
                continue
            hessian = m.potential_hessian(r)
            if hessian is None:  # a map without a closed form: the engine differentiates the sum twice
                return None
            parts.append(self._pad(hessian, dims=(-1, -2)))
        return self._rows(parts)

    def recenter(self, q, q_dot):
        moved = [m.recenter(r, v) for (_, m), r, v in zip(self.groups, self._parts(q), self._parts(q_dot))]
        return self._rows([self._pad(a) for a, _ in moved]), self._rows([self._pad(b) for _, b in moved])

    def flow(self, q):
        return self._rows([m.flow(r) for (_, m), r in zip(self.groups, self._parts(q))])

    def snapshot(self):
        return [m.snapshot() for _, m in self.groups]

    def restore(self, snapshot):
        for (_, m), state in zip(self.groups, snapshot):
            m.restore(state)

    def pose(self, q):
        poses = [m.pose(r) for (_, m), r in zip(self.groups, self._parts(q))]
        return {k: self._rows([p[k] for p in poses]) for k in ("translation", "rotation")}

    def chart_speed(self, q_dot):
        return max(m.chart_speed(v) for (_, m), v in zip(self.groups, self._parts(q_dot)))

    def latent_speed(self, q_dot):
        return max(m.latent_speed(v) for (_, m), v in zip(self.groups, self._parts(q_dot)))


def _padded(tensors, weights=None, count=None):
    """Per-body point sets (1, P_b, ...) stacked to (B, P, ...), P the longest (or ``count``): padded
    with each body's first point (or zeros when it has none), their ``weights`` (1, P_b) with zeros."""
    count = count or max(t.shape[1] for t in tensors)
    rows = []
    for t in tensors:
        filler = t[:, :1] if t.shape[1] else torch.zeros((1, 1) + t.shape[2:], dtype=t.dtype)
        rows.append(torch.cat([t, filler.expand((1, count - t.shape[1]) + t.shape[2:])], 1))
    stacked = torch.cat(rows)
    if weights is None:
        return stacked
    return stacked, torch.cat([torch.nn.functional.pad(w, (0, count - w.shape[1])) for w in weights])


def _pin_paths(envs):
    """The bodies' pin paths (1, K_b, N_b, 3) as one (B, K, N, 3), or None when no pin moves: a body
    whose pins hold still keeps their places at every frame, a shorter path holds its last frame."""
    if all(e.pin_path is None for e in envs):
        return None
    paths = [e.pin_path if e.pin_path is not None else e.pin_points[:, None] for e in envs]
    frames = max(p.shape[1] for p in paths)
    paths = [torch.cat([p, p[:, -1:].expand(-1, frames - p.shape[1], -1, -1)], 1) for p in paths]
    return _padded([p.transpose(1, 2) for p in paths]).transpose(1, 2)


def _per_body(value, dtype):
    return torch.as_tensor(value, dtype=dtype).reshape(-1)[:1]


def _support_weights(env: Environment) -> torch.Tensor:
    """A body's support points' shares of the directions (1, K), even where it has none of its own (it
    rolls on its samples, and the support's weights are asked of every row)."""
    if env.support_weights is not None:
        return env.support_weights
    count = env.support_points.shape[1]
    return torch.full((1, count), 1.0 / count, dtype=env.support_points.dtype)


def stacked_environment(bodies: list[Body], obstacles: Obstacles) -> Environment:
    """The bodies' environments as one batch: point sets padded with weightless points, each body's
    material and contact settings its own row."""
    envs = [b.env for b in bodies]
    dtype = envs[0].gravity.dtype
    contact, contact_mass = _padded([e.contact_points for e in envs], [e.contact_mass for e in envs])
    pins, pin_mass = _padded([e.pin_points for e in envs], [e.pin_mass for e in envs])
    loads = _padded([e.load_points for e in envs])
    vectors = _padded([e.load_vectors for e in envs])
    vectors[torch.cat([torch.arange(vectors.shape[1])[None] >= e.load_vectors.shape[1] for e in envs])] = 0.0
    windows = _padded([e.load_windows for e in envs])
    impacts = [e.impact_restitution for e in envs]
    row = lambda name: torch.cat([_per_body(getattr(e, name), dtype) for e in envs])
    return Environment(
        gravity=envs[0].gravity,
        ground_height=None if envs[0].ground_height is None else torch.cat([e.ground_height for e in envs]),
        friction=row("friction"), restitution=row("restitution"), drag=row("drag"), damping=row("damping"),
        rolling_lever=row("rolling_lever"), rolling_regularization=row("rolling_regularization"),
        contact_stiffness=row("contact_stiffness"), flat_share=row("flat_share"),
        impact_restitution=None if all(i is None for i in impacts) else
        torch.cat([_per_body(torch.inf if i is None else i, dtype) for i in impacts]),
        friction_regularization=envs[0].friction_regularization, pin_stiffness=envs[0].pin_stiffness,
        contact_points=contact, contact_mass=contact_mass, pin_points=pins, pin_mass=pin_mass,
        **({} if any(e.support_points is None for e in envs) else dict(zip(
            ("support_points", "support_weights"),
            _padded([e.support_points for e in envs], [_support_weights(e) for e in envs])))),
        support_contact=None if all(e.support_contact is None for e in envs) else
        torch.cat([torch.tensor([False]) if e.support_contact is None else e.support_contact for e in envs]),
        pin_path=_pin_paths(envs), pin_fps=envs[0].pin_fps,
        load_points=loads, load_vectors=vectors, load_windows=windows, obstacles=obstacles,
        surface_points=_padded([torch.as_tensor(b.vertices, dtype=dtype)[None] for b in bodies]),
        surface_faces=[np.asarray(b.faces) for b in bodies])


def simulate_scene(bodies: list[tuple], model=None, progress: Callable[[int, int], bool | None] | None = None,
                   points: list | None = None) -> list[SimulationResult]:
    """Simulate every (vertices, faces, Conditions) of ``bodies`` together, each given in world space at
    t = 0; a SimulationResult per body, in order. The Conditions of a scene share its frames, fps,
    gravity, ground, integrator, substeps and sleep, and its colliders (the first body's; the others'
    may repeat them or leave them out); ValueError names a field that differs. ``points`` (one (P, 3)
    array or None per body) as ``simulation.simulate``'s. Raises as ``simulate`` does."""
    if not bodies:
        raise ValueError("a scene needs at least one body")
    first = bodies[0][2]
    for i, (_, _, c) in enumerate(bodies[1:], 1):
        for name in SHARED:
            if getattr(c, name) != getattr(first, name):
                raise ValueError(f"body {i}'s {name} ({getattr(c, name)!r}) differs from body 0's "
                                 f"({getattr(first, name)!r}): a scene runs on one clock, gravity and ground")
        if c.colliders and c.colliders is not first.colliders:
            raise ValueError(f"body {i} has colliders of its own: a scene's colliders are given with body 0")
    points = points or [None] * len(bodies)
    among = len(bodies) > 1 or bool(first.colliders)  # meshes to meet besides the ground
    prepared = [prepare(v, f, dataclasses.replace(c, colliders=[]), model, p, among_meshes=among)
                for (v, f, c), p in zip(bodies, points)]
    kmap = StackedMap([b.kmap for b in prepared])
    surfaces = BodySurfaces([np.asarray(b.faces) for b in prepared], np.array([b.conditions.friction for b in prepared]),
                            np.array([is_closed(b.faces) for b in prepared]))
    env = stacked_environment(prepared, Obstacles(first.colliders, first.fps, surfaces))
    pad = lambda t: torch.nn.functional.pad(t, (0, kmap.n_dof - t.shape[1]))
    q0 = torch.cat([pad(b.q0) for b in prepared])
    q_dot0 = torch.cat([pad(b.q_dot0) for b in prepared])
    output = _padded([b.output_points for b in prepared])
    conditions = prepared[0].conditions
    trajectory = rollout(LagrangianSystem(kmap, env), q0, q_dot0, conditions.frames, conditions.fps,
                         conditions.integrator, output_points=output, substeps=conditions.substeps,
                         progress=progress, sleep=conditions.sleep)
    return [SimulationResult(positions=trajectory.points[:, i, :b.output_points.shape[1]], times=trajectory.times,
                             pose={k: p[:, i] for k, p in trajectory.pose.items()},
                             coordinates=trajectory.coordinates[:, i, :kmap.sizes[i]],
                             energy={k: e[:, i] for k, e in trajectory.energy.items()},
                             substeps=trajectory.substeps, integrator=trajectory.method,
                             refined_frames=trajectory.refined_frames, asleep_frames=trajectory.asleep_frames,
                             steps=trajectory.steps,
                             report=b.report) for i, b in enumerate(prepared)]
