"""Articulated sequences: a procedural object, a random drop, throw or push, simulated by MuJoCo."""

import dataclasses
import time

import numpy as np

from neurok_blender.core import Pull

from training.reference.articulated import ArticulatedMaterial, simulate_articulated
from training.shapes.articulated import BUILDERS, INSIDE
from neurok_blender.core.mesh import winding_number
from training.shapes.geometry import axis_rotation, enclosed_volume, surface_distance

from .conditions import describe, drop_height, nudged, random_conditions, random_orientation
from .sequence import HELDOUT_SHAPES, SPLIT_STREAM, Sequence

GENERATOR = "articulated-mujoco-6"  # 2: hinges on edges, swept ranges, overlap measured; 3: pull; 4: stable steps; 5: elliptic friction cone; 6: figures with limbs
OVERLAP_EVERY = 6  # frames between part-overlap measurements


def sample_articulated(seed: int, split: str, nudge: float = 0.0) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, conditions and material from the seed;
    ``nudge`` adds that much initial velocity along x (``conditions.nudged``)."""
    rng = np.random.default_rng([seed, SPLIT_STREAM[split]])
    builder = sorted(BUILDERS)[int(rng.integers(len(BUILDERS)))]
    shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
    obj = BUILDERS[builder](np.random.default_rng(shape_seed)).moved(random_orientation(rng), np.zeros(3))
    obj = obj.moved(np.eye(3), [0.0, 0.0, drop_height(rng, obj.mesh()[0])])
    vertices, faces, part_ids = obj.mesh()
    conditions = nudged(random_conditions(rng, vertices), nudge)
    if conditions.pull is not None:
        conditions = dataclasses.replace(conditions, pull=_reachable_pull(rng, obj, vertices, part_ids))
    mass = conditions.mass
    material = ArticulatedMaterial(
        joint_damping=float(mass * np.exp(rng.uniform(np.log(1e-4), np.log(0.3)))),
        joint_stiffness=float(mass * np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))) if rng.random() < 0.3 else 0.0,
        friction=conditions.friction)
    began = time.perf_counter()
    run = simulate_articulated(obj, material, conditions)
    seconds = time.perf_counter() - began

    volumes = np.array([enclosed_volume(v, f) for v, f in obj.parts])
    part_mass = mass * volumes / volumes.sum()
    checks = {"penetration": float(max(0.0, -run.positions[..., 2].min())), "pivot_gap": run.pivot_gap,
              "finite": bool(np.isfinite(run.positions).all()), "solver_warnings": run.warnings, "seconds": seconds,
              "part_overlap": _part_overlap(obj, run.positions)}
    if conditions.pull is not None:
        checks["hold_gap"] = run.hold_gap
    if not conditions.forces:
        checks["energy_rise"] = float(max(0.0, (run.energy - run.energy[0]).max()) / run.energy[0])
    return Sequence(
        category="articulated", shape=f"{builder}-{shape_seed}", split=split, seed=seed, fps=conditions.fps,
        rest_vertices=vertices.astype(np.float32), faces=faces.astype(np.int32), positions=run.positions,
        masses=(part_mass / np.bincount(part_ids))[part_ids].astype(np.float32), part_ids=part_ids,
        material=vars(material), conditions=describe(conditions), checks=checks, generator=GENERATOR)


def _reachable_pull(rng, obj, vertices, part_ids) -> Pull | None:
    """A pull the joints can follow: a handle on a joint's child part moved as the joint would move it
    (turned about a hinge, slid along a slide) by a random amount inside the joint's range."""
    joints = [j for j in obj.joints if j.kind != "fixed"]
    if not joints:
        return None
    joint = joints[int(rng.integers(len(joints)))]
    size = float(np.ptp(vertices, axis=0).max())
    reach = 0.8 if joint.kind == "hinge" else 0.2 * size  # rad or m, at most
    low, high = joint.limits if joint.limits is not None else (-reach, reach)
    sides = [room for room in (min(high, reach), max(low, -reach)) if abs(room) > 0.1 * reach]
    if not sides:
        return None  # the joint is jammed at its rest pose
    amount = sides[int(rng.integers(len(sides)))] * rng.uniform(0.25, 1.0)
    on_child = np.flatnonzero(part_ids == joint.child)
    grabbed = vertices[on_child[int(rng.integers(len(on_child)))]]
    handle = on_child[np.argsort(np.linalg.norm(vertices[on_child] - grabbed, axis=1))[:int(rng.integers(1, 9))]]
    point = vertices[handle].mean(0)
    if joint.kind == "hinge":
        target = joint.anchor + axis_rotation(joint.axis, amount) @ (point - joint.anchor)
    else:
        target = point + joint.axis * amount
    return Pull(sorted(int(i) for i in handle), tuple(target - point))


def _part_overlap(obj, positions) -> float:
    """Deepest a vertex of one part gets inside another (m), every OVERLAP_EVERY frames: parts do not
    collide with each other in the reference, so swept joint ranges are what keeps them apart."""
    _, _, part_ids = obj.mesh()
    deepest = 0.0
    for frame in positions[::OVERLAP_EVERY].astype(np.float64):
        for j, (_, faces) in enumerate(obj.parts):
            mesh = (frame[part_ids == j], faces)
            others = frame[part_ids != j]
            inside = others[winding_number(others, *mesh) > INSIDE]
            if len(inside):
                deepest = max(deepest, float(surface_distance(inside, *mesh).max()))
    return deepest
