"""Volumetric elastic sequences: a procedural solid from soft jelly to stiff rubber, FEM in MuJoCo."""

import time

import numpy as np

from training.reference.elastic import ElasticMaterial, simulate_elastic
from neurok_blender.core.mesh import triangle_areas
from training.shapes.solids import superquadric
from training.shapes.tetra import layered_tets

from .conditions import describe, drop_height, nudged, random_conditions, random_orientation
from .sequence import HELDOUT_SHAPES, SPLIT_STREAM, Sequence

GENERATOR = "elastic-mujoco-flex-5"  # 2: pull-and-release; 3: blow-ups refused; 4: elliptic friction cone;
# 5: angular momentum kept in free flight
SIMULATION_GRID = dict(rings=14, segments=20)  # the FEM's coarser copy of the shape: 2 layers, 525 nodes


def sample_elastic(seed: int, split: str, nudge: float = 0.0) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, conditions and material from the seed;
    ``nudge`` adds that much initial velocity along x (``conditions.nudged``)."""
    rng = np.random.default_rng([seed, SPLIT_STREAM[split]])
    shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
    vertices, faces = superquadric(np.random.default_rng(shape_seed))
    coarse, coarse_faces = superquadric(np.random.default_rng(shape_seed), **SIMULATION_GRID)  # same shape
    rotation = random_orientation(rng)
    lift = np.array([0.0, 0.0, drop_height(rng, vertices @ rotation.T)])
    vertices, coarse = vertices @ rotation.T + lift, coarse @ rotation.T + lift
    conditions = nudged(random_conditions(rng, vertices), nudge)
    material = ElasticMaterial(young=float(np.exp(rng.uniform(np.log(1e4), np.log(5e5)))),
                               poisson=float(rng.uniform(0.25, 0.45)),
                               damping=float(np.exp(rng.uniform(np.log(5e-4), np.log(5e-3)))),
                               friction=conditions.friction)
    began = time.perf_counter()
    run = simulate_elastic(vertices, faces, material, conditions, tets=layered_tets(coarse, coarse_faces, layers=2))
    seconds = time.perf_counter() - began

    checks = {"penetration": float(max(0.0, -run.positions[..., 2].min())),
              "volume_error": float(np.abs(run.volume_ratio - 1).max()),
              "finite": bool(np.isfinite(run.positions).all()), "solver_warnings": run.warnings, "seconds": seconds}
    if conditions.pull is not None:
        checks["hold_speed"] = run.hold_speed
    return Sequence(
        category="elastic", shape=f"superquadric-{shape_seed}", split=split, seed=seed, fps=conditions.fps,
        rest_vertices=vertices.astype(np.float32), faces=faces.astype(np.int32), positions=run.positions,
        masses=surface_masses(vertices, faces, conditions.mass), material=vars(material),
        conditions=describe(conditions), checks=checks, generator=GENERATOR)


def surface_masses(vertices, faces, mass):
    """The body's mass spread over the surface vertices by their share of the area (a third per triangle)."""
    area = triangle_areas(vertices, faces)
    share = np.zeros(len(vertices))
    np.add.at(share, faces.ravel(), np.repeat(area / 3, 3))
    return (mass * share / share.sum()).astype(np.float32)
