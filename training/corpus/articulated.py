"""Articulated sequences: a procedural object, a random drop, throw or push, simulated by MuJoCo."""

import time

import numpy as np

from neurok_blender.core import Conditions, Force
from training.reference.articulated import ArticulatedMaterial, simulate_articulated
from training.shapes.articulated import BUILDERS

from .sequence import Sequence

GENERATOR = "articulated-mujoco-1"
HELDOUT_SHAPES = 1_000_000  # shape seeds at or above this are held out; below, training
FRAMES, FPS = 60, 24.0


def sample_articulated(seed: int, split: str) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, conditions and material from the seed."""
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    builder = sorted(BUILDERS)[int(rng.integers(len(BUILDERS)))]
    shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
    obj = BUILDERS[builder](np.random.default_rng(shape_seed))
    obj = obj.moved(_orientation(rng), np.zeros(3))
    drop = rng.uniform(0.0, 1.0) - min(v[:, 2].min() for v, _ in obj.parts)
    obj = obj.moved(np.eye(3), [0.0, 0.0, drop])
    vertices, faces, part_ids = obj.mesh()

    mass = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
    forces = []
    if rng.random() < 0.5:
        direction = rng.normal(size=3)
        start = int(rng.integers(0, 20))
        forces.append(Force(tuple(direction / np.linalg.norm(direction) * mass * 9.81 * rng.uniform(0.5, 4.0)),
                            point=tuple(vertices[int(rng.integers(len(vertices)))]),
                            start_frame=start, end_frame=start + int(rng.integers(2, 9))))
    conditions = Conditions(frames=FRAMES, fps=FPS, ground_height=0.0, mass=mass, forces=forces,
                            velocity=(rng.normal(0, 0.7), rng.normal(0, 0.7), rng.uniform(-1.0, 1.5)),
                            angular_velocity=tuple(rng.normal(0, 2.5, size=3)))
    material = ArticulatedMaterial(
        joint_damping=float(mass * np.exp(rng.uniform(np.log(1e-4), np.log(0.3)))),
        joint_stiffness=float(mass * np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))) if rng.random() < 0.3 else 0.0,
        friction=float(rng.uniform(0.2, 1.0)))
    began = time.perf_counter()
    run = simulate_articulated(obj, material, conditions)
    seconds = time.perf_counter() - began

    volumes = np.array([_volume(v, f) for v, f in obj.parts])
    part_mass = mass * volumes / volumes.sum()
    checks = {"penetration": float(max(0.0, -run.positions[..., 2].min())), "pivot_gap": run.pivot_gap,
              "finite": bool(np.isfinite(run.positions).all()), "seconds": seconds}
    if not forces:
        checks["energy_rise"] = float(max(0.0, (run.energy - run.energy[0]).max()) / run.energy[0])
    return Sequence(
        category="articulated", shape=f"{builder}-{shape_seed}", split=split, seed=seed, fps=FPS,
        rest_vertices=vertices.astype(np.float32), faces=faces.astype(np.int32), positions=run.positions,
        masses=(part_mass / np.bincount(part_ids))[part_ids].astype(np.float32), part_ids=part_ids,
        material=vars(material), conditions=_describe(conditions), checks=checks, generator=GENERATOR)


def _orientation(rng):
    """Half of the drops upright with a random heading, half in a uniformly random orientation."""
    if rng.random() < 0.5:
        yaw = rng.uniform(0, 2 * np.pi)
        c, s = np.cos(yaw), np.sin(yaw)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q * np.linalg.det(q)


def _describe(conditions: Conditions) -> dict:
    d = dict(vars(conditions))
    d["forces"] = [dict(vars(f)) for f in conditions.forces]
    return d


def _volume(v, f):
    return abs(np.einsum("fi,fi->", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]]))) / 6.0
