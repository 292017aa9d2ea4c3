"""The public entry point: a mesh and Conditions in, world-space frames out."""

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from .options import DEFORMABLE, Conditions
from .dynamics import Environment, LagrangianSystem
from .initial import fit_initial_state
from .mesh import check_mesh, contact_samples
from .rigid import RigidBodyMap
from .trajectory import rollout

DTYPE = torch.float64


@dataclass
class SimulationResult:
    positions: np.ndarray  # (frames, V, 3) float32, world space
    times: np.ndarray  # (frames,) s
    pose: dict[str, np.ndarray]  # rigid: "translation" (frames, 3) centre of mass, "rotation" (frames, 3, 3)
    coordinates: np.ndarray  # (frames, n) generalized coordinates, each frame in its own chart
    energy: dict[str, np.ndarray]  # (frames,) each: kinetic, potential, gravity, contact, load_work, dissipated, total, balance
    substeps: int  # integration steps per frame, at least (fast or refined frames take more)
    integrator: str  # the method that ran (Conditions.integrator, ``auto`` resolved)
    refined_frames: int = 0  # frames redone with more steps after going non-finite (trajectory.MAX_REFINEMENT)
    info: dict = field(default_factory=lambda: {"category": "rigid"})  # what the solver chose (neurok.py)

    @classmethod
    def from_trajectory(cls, trajectory, info: dict | None = None) -> "SimulationResult":
        """The one body of a batch-of-one ``Trajectory``."""
        return cls(positions=trajectory.points[:, 0], times=trajectory.times,
                   pose={k: p[:, 0] for k, p in trajectory.pose.items()},
                   coordinates=trajectory.coordinates[:, 0],
                   energy={k: e[:, 0] for k, e in trajectory.energy.items()},
                   substeps=trajectory.substeps, integrator=trajectory.method,
                   refined_frames=trajectory.refined_frames,
                   **({"info": info} if info is not None else {}))


def simulate(vertices, faces, conditions: Conditions | None = None,
             progress: Callable[[int, int], bool | None] | None = None, points=None,
             contact: dict | None = None) -> SimulationResult:
    """Simulate one mesh as a rigid body, given in world space at t = 0, under ``conditions``.

    ``positions`` follow the mesh vertices, or the material points ``points`` (P, 3) given at t = 0
    (Blender moves the base mesh under its modifiers this way). ``contact`` replaces Environment
    fields of the ground contact (``neurok.ground_contact``: a deforming body's, for comparison).

    Raises ValueError for bad input, SimulationError if the rollout goes non-finite and
    SimulationCancelled if ``progress`` returns False.
    """
    conditions = conditions or Conditions()
    v, f = check_mesh(vertices, faces)
    conditions.check(len(v))
    v, points, conditions, lifted = lifted_onto_ground(v, points, conditions)
    if conditions.category in DEFORMABLE:
        raise ValueError(f"category {conditions.category!r} deforms: that needs the neural model, "
                         "NeuROK.load().simulate(...); this function moves the body rigidly")
    if conditions.pull is not None:
        raise ValueError("pull-and-release bends the body; the rigid category has no deformation coordinates")
    kmap, (props,) = RigidBodyMap.from_meshes([(v, f)], [conditions.mass], DTYPE)
    system = LagrangianSystem(kmap, replace(environment(conditions, v), **(contact or {})))

    center = torch.as_tensor(props.center, dtype=DTYPE)
    mass_points = kmap.mass_points
    omega = torch.as_tensor(conditions.angular_velocity, dtype=DTYPE).expand_as(mass_points)
    velocities = torch.as_tensor(conditions.velocity, dtype=DTYPE) + torch.cross(omega, mass_points - center, dim=-1)
    q0, q_dot0 = fit_initial_state(kmap, mass_points, mass_points, velocities, kmap.masses)

    trajectory = rollout(system, q0, q_dot0, conditions.frames, conditions.fps, conditions.integrator,
                         output_points=output_points(v if points is None else points), substeps=conditions.substeps,
                         progress=progress)
    return SimulationResult.from_trajectory(trajectory, {"category": "rigid", "lifted": lifted})


def lifted_onto_ground(vertices: np.ndarray, points, conditions: Conditions):
    """A body that starts (partly) below the ground, moved up by the depth d of its lowest vertex so
    that it starts on it: (vertices, points, conditions with the forces' points moved along, d in m).

    Left where it is, the ground's spring would push it out with the energy k d^2 / 2 per unit mass,
    at about d sqrt(k) = 316 d /s on the stiff floor: Blender's default cube, half in the ground,
    left at about 100 m/s. d = 0 for a body above the ground or without one.
    """
    if conditions.ground_height is None:
        return vertices, points, conditions, 0.0
    depth = float(conditions.ground_height - vertices[:, 2].min())
    if depth <= 0:
        return vertices, points, conditions, 0.0
    up = np.array([0.0, 0.0, depth])
    forces = [force if force.point is None else replace(force, point=np.asarray(force.point, dtype=np.float64) + up)
              for force in conditions.forces]
    return (vertices + up, None if points is None else np.asarray(points, dtype=np.float64) + up,
            replace(conditions, forces=forces), depth)


def output_points(points):
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or not np.isfinite(p).all():
        raise ValueError(f"points must be a finite (P, 3) array, got shape {p.shape}")
    return torch.as_tensor(p, dtype=DTYPE)[None]


def environment(conditions: Conditions, vertices: np.ndarray) -> Environment:
    """Turn Conditions into the engine's batched tensors for one body."""
    contact = vertices[contact_samples(vertices)]
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
    return Environment(
        gravity=torch.as_tensor(conditions.gravity, dtype=DTYPE),
        ground_height=ground,
        friction=conditions.friction,
        restitution=0.0 if conditions.restitution is None else conditions.restitution,
        impact_restitution=conditions.restitution,
        drag=conditions.drag,
        contact_points=tensor(contact, 3),
        contact_mass=torch.full((1, len(contact)), conditions.mass / len(contact), dtype=DTYPE),
        load_points=tensor(load_points, 3),
        load_vectors=tensor(load_vectors, 3),
        load_windows=tensor(load_windows, 2),
    )
