"""The public entry point: a mesh and Conditions in, world-space frames out, for every category.

    result = simulate(vertices, faces, Conditions(frames=48), model=NeuROK.load())
    result.positions                     # (frames, V, 3) float32, world space
    result.report                        # what the solver chose: category, coordinates, material

A rigid body needs no model; a deforming one moves on the learned coordinates of ``model``
(``neurok.NeuROK.body``). Either way the body is lifted out of the ground, started from its initial
state (``initial.py``) and integrated frame by frame (``trajectory.rollout``).
"""

import dataclasses
from typing import Callable

import numpy as np
import torch

from .category import resolve_category
from .dynamics import SUPPORT_ROLLING, SUPPORT_ROLLING_SLIP, SUPPORT_SHARE, Environment, LagrangianSystem
from .initial import initial_state
from .kinematics import KinematicMap
from .material import BodyMaterial
from .mesh import (bbox_diagonal, check_mesh, contact_samples, edge_samples, face_samples, most_on_one_plane,
                   round_hull, support_samples)
from .mirror import find_mirrors
from .obstacles import Obstacles
from .options import Conditions
from .rigid import RigidBodyMap
from .trajectory import OUTPUT, choose_method, rollout

DTYPE = torch.float64


@dataclasses.dataclass
class Report:
    """What the solver chose that the user did not set, for the add-on's report and for benchmarks."""

    category: str  # the category simulated ("auto" resolved)
    category_reason: str = ""  # why "auto" chose it ("" for a category given)
    lifted: float = 0.0  # m: how far the body was lifted out of the ground (lifted_onto_ground)
    reduced_coordinates: int = 0  # learned coordinates, all mirror blocks together (0: it moved rigidly)
    mirrors: int = 1  # reflections that map the mesh onto itself (mirror.find_mirrors)
    captured: float | None = None  # share of the active subspace's eigenvalue sum the coordinates keep
    mass_at: str | None = None  # "volume" or "surface" (mass_points.material_points)
    material: BodyMaterial | None = None  # the material it integrated with (material.body_material)
    pull_reached: float | None = None  # share of the pull's displacement the handle reached
    joints: int = 0  # articulated: the pairs of parts joined where they touch (articulation.find_joints)


@dataclasses.dataclass
class SimulationResult:
    positions: np.ndarray  # (frames, V, 3) float32, world space
    times: np.ndarray  # (frames,) s
    pose: dict[str, np.ndarray]  # rigid: "translation" (frames, 3) centre of mass, "rotation" (frames, 3, 3)
    coordinates: np.ndarray  # (frames, n) generalized coordinates, each frame in its own chart
    energy: dict[str, np.ndarray]  # (frames,) each: kinetic, potential, gravity, contact, pins, load_work, dissipated, total, balance
    substeps: int  # integration steps of a frame that meets the ground (fewer at rest or in flight, more when fast)
    integrator: str  # the method that ran (Conditions.integrator, ``auto`` resolved)
    report: Report  # what the solver chose
    refined_frames: int = 0  # frames redone with more steps after going non-finite (trajectory.MAX_REFINEMENT)
    asleep_frames: int = 0  # frames the body slept through at rest (Conditions.sleep)
    steps: int = 0  # integration steps of the whole run, redone frames' last attempt counted


@dataclasses.dataclass
class Body:
    """A mesh made ready to integrate (``prepare``): its map, what acts on it and where it starts."""

    kmap: KinematicMap
    env: Environment
    q0: torch.Tensor  # (1, n)
    q_dot0: torch.Tensor  # (1, n)
    output_points: torch.Tensor  # (1, P, 3): what the frames are drawn at (the vertices, or ``points``)
    conditions: Conditions  # as integrated: lifted out of the ground with the body
    vertices: np.ndarray  # (V, 3) world, lifted
    faces: np.ndarray
    report: Report

    @property
    def learned(self) -> bool:
        return not isinstance(self.kmap, RigidBodyMap)


def prepare(vertices, faces, conditions: Conditions | None = None, model=None, points=None,
            contact: dict | None = None, among_meshes: bool = False) -> Body:
    """Everything before the first step of ``simulate`` (same arguments): the checks, the category,
    the lift out of the ground, the body's coordinates and material, and its initial state;
    ``among_meshes``: other bodies' meshes can meet it (a rigid one then touches with points along its
    edges too, as it does among colliders: ``touching_points``)."""
    conditions = conditions or Conditions()
    v, f = check_mesh(vertices, faces)
    conditions.check(len(v))
    category, reason = ("rigid", "") if model is None and conditions.category == "auto" else \
        resolve_category(conditions.category, v, f)
    if category != "rigid" and model is None:
        raise ValueError(f"category {category!r} deforms: that needs the neural model, "
                         "simulate(..., model=NeuROK.load())")
    if category == "rigid" and conditions.pull is not None:
        raise ValueError("pull-and-release bends the body; the rigid category has no deformation coordinates")
    v, points, conditions, lifted = lifted_onto_ground(v, points, conditions)
    spread = "faces" if category != "rigid" else "edges" if among_meshes or conditions.colliders else None
    env = environment(conditions, v, f, spread)
    kmap, report = None, Report(category)
    if category != "rigid":
        kmap, report = model.body(v, f, conditions, category)
        material = report.material
        if kmap is not None:
            env = dataclasses.replace(env, damping=material.damping, **material.ground_contact(float(kmap.gyration)))
        else:  # no deformation of this mesh is worth a coordinate: it moves rigidly, landing as it would
            contact, conditions = material.ground_contact(None), dataclasses.replace(conditions, pull=None)
    report.category_reason, report.lifted = reason, lifted
    learned = kmap is not None
    if learned:
        center = kmap.center
    else:
        kmap, (props,) = RigidBodyMap.from_meshes([(v, f)], [conditions.mass], DTYPE)
        env, center = dataclasses.replace(env, **(contact or {})), torch.as_tensor(props.center, dtype=DTYPE)
        if choose_method(conditions.integrator) == "implicit":
            env = with_support_contact(env, conditions.mass, v)
    q0, q_dot0, report.pull_reached = initial_state(kmap, conditions, v, center)

    out = output_points(v if points is None else points)
    if learned and points is None:
        kmap.attach(OUTPUT, out, parts=kmap.shape.vertex_parts, output=True)  # each vertex follows its part
    return Body(kmap, env, q0, q_dot0, out, conditions, v, f, report)


def simulate(vertices, faces, conditions: Conditions | None = None, model=None,
             progress: Callable[[int, int], bool | None] | None = None, points=None,
             contact: dict | None = None) -> SimulationResult:
    """Simulate one mesh, given in world space at t = 0, under ``conditions``.

    ``model`` (a ``neurok.NeuROK``) moves a deforming category; without one, only "rigid" runs (and
    "auto" means it). ``positions`` follow the mesh vertices, or the material points ``points``
    (P, 3) given at t = 0 (Blender moves the base mesh under its modifiers this way). ``contact``
    replaces Environment fields of a rigid body's ground contact (``BodyMaterial.ground_contact``: a
    deforming body's, for comparison).

    Raises ValueError for bad input, SimulationError if the rollout goes non-finite (naming the
    frame) and SimulationCancelled if ``progress`` returns False.
    """
    body = prepare(vertices, faces, conditions, model, points, contact)
    conditions = body.conditions
    trajectory = rollout(LagrangianSystem(body.kmap, body.env), body.q0, body.q_dot0, conditions.frames,
                         conditions.fps, conditions.integrator, output_points=body.output_points,
                         substeps=conditions.substeps, progress=progress, sleep=conditions.sleep)
    return SimulationResult(positions=trajectory.points[:, 0], times=trajectory.times,
                            pose={k: p[:, 0] for k, p in trajectory.pose.items()},
                            coordinates=trajectory.coordinates[:, 0],
                            energy={k: e[:, 0] for k, e in trajectory.energy.items()},
                            substeps=trajectory.substeps, integrator=trajectory.method,
                            refined_frames=trajectory.refined_frames, asleep_frames=trajectory.asleep_frames,
                            steps=trajectory.steps,
                            report=body.report)


def lifted_onto_ground(vertices: np.ndarray, points, conditions: Conditions):
    """A body that starts (partly) below the ground, moved up by the depth d of its lowest vertex so
    that it starts on it: (vertices, points, conditions with the forces' points moved along, d in m).

    Left where it is, the ground's spring would push it out with the energy k d^2 / 2 per unit mass,
    at about d sqrt(k) = 316 d /s on the stiff floor (k = 1e5 /s^2). d = 0 for a body above the
    ground or without one.
    """
    if conditions.ground_height is None:
        return vertices, points, conditions, 0.0
    depth = float(conditions.ground_height - vertices[:, 2].min())
    if depth <= 0:
        return vertices, points, conditions, 0.0
    up = np.array([0.0, 0.0, depth])
    forces = [force if force.point is None else
              dataclasses.replace(force, point=np.asarray(force.point, dtype=np.float64) + up)
              for force in conditions.forces]
    path = None if conditions.pin_path is None else np.asarray(conditions.pin_path, dtype=np.float64) + up
    return (vertices + up, None if points is None else np.asarray(points, dtype=np.float64) + up,
            dataclasses.replace(conditions, forces=forces, pin_path=path), depth)


def with_support_contact(env: Environment, mass: float, vertices: np.ndarray) -> Environment:
    """``env`` of a rigid body, with its support point as contact point 0 when it is round
    (``mesh.round_hull`` of its ``vertices``: a ball, an egg, which would roll over its contact samples
    like a polygon), on the ground, a collider or another body: placed at the lowest of its hull's
    vertices at rest and re-placed at every state (``LagrangianSystem._place_support``) over them and
    their shares of the directions, resting with SUPPORT_SHARE of its ``mass`` (kg), and with the
    rolling resistance of SUPPORT_ROLLING unless it has one already. A box or a low-poly body rests
    and rolls on its samples. For the implicit step alone, which takes the point's turning arm with it
    (``_support_stiffness``): a 2.6k-vertex ball thrown onto the ground booked 15-40 times the energy
    error on it with the explicit methods (0.19 J of 2.3 with RK4)."""
    hull = round_hull(vertices, env.support_points[0].numpy(), env.contact_points[0].numpy())
    if hull is None:
        return env
    support = torch.as_tensor(vertices[hull.indices], dtype=DTYPE)[None]
    lowest = support[:, int(support[0, :, 2].argmin())][:, None]
    weight = torch.full((1, 1), SUPPORT_SHARE * mass, dtype=DTYPE)
    rolling = {} if float(env.rolling_lever) > 0 else dict(  # a material's footprint keeps its own
        rolling_lever=SUPPORT_ROLLING * bbox_diagonal(vertices[hull.indices]),
        rolling_regularization=SUPPORT_ROLLING_SLIP)
    return dataclasses.replace(env, contact_points=torch.cat([lowest, env.contact_points], 1),
                               contact_mass=torch.cat([weight, env.contact_mass], 1), support_points=support,
                               support_weights=torch.as_tensor(hull.shares, dtype=DTYPE)[None],
                               support_contact=torch.tensor([True]), **rolling)


def output_points(points):
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or not np.isfinite(p).all():
        raise ValueError(f"points must be a finite (P, 3) array, got shape {p.shape}")
    return torch.as_tensor(p, dtype=DTYPE)[None]


def contact_points(vertices: np.ndarray, count: int = 128) -> np.ndarray:
    """The vertices (sorted indices) a body touches with: ``mesh.contact_samples``, and on a mesh with
    mirror planes (``mirror.find_mirrors``, |G| > 1) and more than ``count`` vertices, count / |G| of
    them and their mirror images. Samples picked alone lie lopsided (a 386-vertex cube's 31 on its
    bottom face centred 2.4 mm off its middle), so the body would push what it rests on off centre
    and shear it, where the rest of the solve keeps the symmetry."""
    vertices = np.asarray(vertices, dtype=np.float64)
    mirrors = None if len(vertices) <= count else find_mirrors(vertices)
    if mirrors is None or mirrors.size == 1:
        return np.sort(contact_samples(vertices, count))
    picked = contact_samples(vertices, count // mirrors.size)
    return np.unique(mirrors.vertex_images(vertices, picked))


def touching_points(vertices: np.ndarray, faces: np.ndarray, spread: str | None, count: int = 128,
                    edged: int = 64) -> tuple[np.ndarray, float]:
    """The material points (C, 3) a body touches with, and the share of them one flat side of it holds
    at most, relative to its vertices' (``Environment.flat_share``).

    Its ``contact_points`` (``count`` at most, share 1); where ``spread`` asks, more on its surface,
    the share then the most points on the plane of one of its triangles over C, over the same of its
    vertices: a flat side presses as its vertices did alone (a box's 20 points of 56 on a side as its
    4 corners of 8), so a landing on it rings as before.

    - "edges" (a rigid body that can meet meshes: colliders, other bodies; ``prepare``), where fewer
      than ``edged`` of its vertices are picked, ``mesh.edge_samples`` up to ``edged`` points in all:
      a low-poly body meets another's edges where no vertex does (a box laid across another, a plank
      across a beam) and rests on its edges' points up to a support's edge (docs/physics.md, "Several
      bodies"). A plane meets a rigid body first at its hull's vertices, so on the ground alone the
      vertices do.
    - "faces" (a learned body, wherever it is, so that it lands alike alone and among others), of
      fewer than ``edged`` vertices, ``mesh.face_samples`` up to ``count`` points in all: its faces
      bend between their vertices, and what it meets presses on their whole area (Blender's 8-vertex
      cube as a jelly laid across two boxes, or a jelly plank across another, rests on them, where on
      its vertices it fell through)."""
    picked = vertices[contact_points(vertices, count)]
    if spread == "faces" and len(vertices) < edged:
        more = face_samples(vertices, faces, count - len(picked))
    elif spread == "edges" and len(picked) < edged:
        more = edge_samples(vertices, faces, edged - len(picked))
    else:
        return picked, 1.0
    points = np.concatenate([picked, more])
    return points, (most_on_one_plane(points, vertices, faces) / len(points)) / \
        (most_on_one_plane(picked, vertices, faces) / len(picked))


def environment(conditions: Conditions, vertices: np.ndarray, faces: np.ndarray,
                spread: str | None = None) -> Environment:
    """Turn Conditions into the engine's batched tensors for one body, touching with points
    ``spread`` over its surface or its vertices alone (``touching_points``)."""
    contact, flat_share = touching_points(vertices, faces, spread)
    load_points, load_vectors, load_windows = [], [], []
    for force in conditions.forces:
        share = force.share(vertices)
        for p in force.application_points(vertices):
            load_points.append(p)
            load_vectors.append(share)
            load_windows.append((force.start_frame / conditions.fps, force.end_frame / conditions.fps))

    def tensor(rows, width):
        return torch.as_tensor(np.asarray(rows, dtype=np.float64).reshape(1, -1, width), dtype=DTYPE)

    ground = None if conditions.ground_height is None else torch.tensor([conditions.ground_height], dtype=DTYPE)
    pinned, first = np.unique(conditions.pins, return_index=True) if conditions.pins is not None else ([], [])
    pins = vertices[pinned] if conditions.pins is not None else np.zeros((0, 3))
    path = None if conditions.pin_path is None else np.asarray(conditions.pin_path, dtype=np.float64)[:, first]
    return Environment(
        gravity=torch.as_tensor(conditions.gravity, dtype=DTYPE),
        ground_height=ground,
        friction=conditions.friction,
        restitution=0.0 if conditions.restitution is None else conditions.restitution,
        impact_restitution=conditions.restitution,
        drag=conditions.drag,
        contact_points=tensor(contact, 3),
        support_points=tensor(vertices[support_samples(vertices)], 3),
        contact_mass=torch.full((1, len(contact)), conditions.mass / len(contact), dtype=DTYPE), flat_share=flat_share,
        pin_points=tensor(pins, 3),
        pin_mass=torch.full((1, len(pins)), conditions.mass / max(len(pins), 1), dtype=DTYPE),
        pin_path=None if path is None else torch.as_tensor(path, dtype=DTYPE)[None], pin_fps=conditions.fps,
        load_points=tensor(load_points, 3),
        load_vectors=tensor(load_vectors, 3),
        load_windows=tensor(load_windows, 2),
        obstacles=Obstacles(conditions.colliders, conditions.fps) if conditions.colliders else None,
        surface_points=tensor(vertices, 3) if conditions.colliders else None,
        surface_faces=[np.asarray(faces)] if conditions.colliders else None,
    )
