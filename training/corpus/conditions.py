"""Random physical conditions shared by the solid categories (pose, drop, throw, push, pull, mass), and
a stored sequence's conditions as the solver replays them (``conditions_of``)."""

import dataclasses

import numpy as np

from neurok_blender.core import Collider, Conditions, Force, Pull
from neurok_blender.core.mesh import box_mesh
from training.reference.cloth import COLLIDER_THICKNESS
from training.shapes.solids import grid_surface

FRAMES, FPS = 60, 24.0


def random_orientation(rng) -> np.ndarray:
    """Half upright with a random heading, half uniformly random (QR of a Gaussian, sign-fixed)."""
    if rng.random() < 0.5:
        yaw = rng.uniform(0, 2 * np.pi)
        c, s = np.cos(yaw), np.sin(yaw)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q * np.linalg.det(q)


def drop_height(rng, vertices) -> float:
    """Lift that puts the lowest vertex 0 to 1 m above the ground at z = 0."""
    return rng.uniform(0.0, 1.0) - vertices[:, 2].min()


def random_conditions(rng, vertices) -> Conditions:
    """A drop with a random throw and spin; half of the runs get a push on one vertex for 2-8 frames,
    a quarter a pull-and-release of a small handle (1-8 neighbouring vertices) by 5-25 % of the body's size."""
    mass = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
    forces = []
    if rng.random() < 0.5:
        direction = rng.normal(size=3)
        start = int(rng.integers(0, 20))
        forces.append(Force(tuple(direction / np.linalg.norm(direction) * mass * 9.81 * rng.uniform(0.5, 4.0)),
                            point=tuple(vertices[int(rng.integers(len(vertices)))]),
                            start_frame=start, end_frame=start + int(rng.integers(2, 9))))
    pull = None
    if rng.random() < 0.25:
        grabbed = vertices[int(rng.integers(len(vertices)))]
        handle = np.argsort(np.linalg.norm(vertices - grabbed, axis=1))[:int(rng.integers(1, 9))]
        direction = rng.normal(size=3)
        size = float(np.ptp(vertices, axis=0).max())
        pull = Pull(sorted(int(i) for i in handle), tuple(direction / np.linalg.norm(direction) * size * rng.uniform(0.05, 0.25)))
    # MuJoCo's contacts here are critically damped: a dead ground (restitution None), on which a body
    # bounces as its material gives; friction is the ground's
    return Conditions(frames=FRAMES, fps=FPS, ground_height=0.0, mass=mass, forces=forces, pull=pull,
                      velocity=(rng.normal(0, 0.7), rng.normal(0, 0.7), rng.uniform(-1.0, 1.5)),
                      angular_velocity=tuple(rng.normal(0, 2.5, size=3)), friction=float(rng.uniform(0.2, 1.0)),
                      restitution=None)


def nudged(conditions: Conditions, nudge: float) -> Conditions:
    """``conditions`` with ``nudge`` m/s more initial velocity along x: a start no measurement of the
    scene would tell apart, to see how far the reference itself runs off (``benchmarks/reference_spread.py``)."""
    vx, vy, vz = conditions.velocity
    return dataclasses.replace(conditions, velocity=(vx + nudge, vy, vz))


SOLVER_SETTINGS = ("integrator", "substeps", "expansion")  # how we integrate, not what the reference simulated


def conditions_of(sequence, **changes) -> Conditions:
    """The Conditions a sequence was made with (``describe``'s inverse), with ``changes`` applied: a
    cloth sequence's obstacles as colliders (``obstacle_mesh``, Blender's outer thickness, the ground's
    friction), and none of our solver's own settings stored with it (a corpus made when RK4 was the
    default replayed its sequences with RK4)."""
    d = {k: v for k, v in sequence.conditions.items()
         if k in Conditions.__dataclass_fields__ and k not in SOLVER_SETTINGS}
    d["colliders"] = [Collider(*obstacle_mesh(o), friction=d.get("friction", Conditions.friction),
                               thickness=COLLIDER_THICKNESS, name=o["kind"])
                      for o in sequence.conditions.get("obstacles") or []]
    d["forces"] = [Force(**f) for f in d.get("forces", [])]
    d["restitution"] = None  # every reference's ground is dead, whatever a stored corpus says (0.0)
    d["pull"] = Pull(**d["pull"]) if d.get("pull") else None
    for name in ("gravity", "velocity", "angular_velocity"):
        d[name] = tuple(d[name])
    return Conditions(**{**d, **changes})


def obstacle_mesh(obstacle: dict) -> tuple[np.ndarray, np.ndarray]:
    """The triangles of an obstacle as a cloth sequence describes it: a sphere ("center", "radius") or a
    box standing on the ground ("corner", "size")."""
    if obstacle["kind"] == "sphere":
        u, v, faces = grid_surface(16, 24)
        unit = np.stack([np.cos(u), np.sin(u) * np.cos(v), np.sin(u) * np.sin(v)], 1)
        return np.asarray(obstacle["center"], dtype=np.float64) + obstacle["radius"] * unit, faces
    return box_mesh(tuple(obstacle["size"]), tuple(obstacle["corner"]))


def describe(conditions: Conditions) -> dict:
    """Conditions as plain data for the manifest."""
    d = dict(vars(conditions))
    d["forces"] = [dict(vars(f)) for f in conditions.forces]
    d["pull"] = None if conditions.pull is None else dict(vars(conditions.pull))
    return d
