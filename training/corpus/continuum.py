"""Continuum sequences: a solid (``solids.py``) of jelly, snow, clay or sand, MLS-MPM in Taichi.

Stiffness is drawn relative to the body's own weight, E = S rho g L (L the cube root of its volume):
a body then looks as soft or as firm whatever its size and mass, and the step count, set by the wave
speed sqrt(E / rho) over the cell size, stays within budget. Measured on train seeds 0-39 (4000
particles, 1 thread): 1 239-5 698 steps, 3.7-15.8 s of CPU per sequence, 6.9 s mean (snow 8.9, jelly
7.5, clay 6.8, sand 5.3); none failed; surface 9 mm below the ground at worst.
"""

import dataclasses
import time

import numpy as np

from training.reference.continuum import MODELS, ContinuumMaterial, simulate_continuum
from training.shapes.geometry import enclosed_volume

from .conditions import describe, drop_height, nudged, random_conditions, random_orientation
from .elastic import surface_masses
from .sequence import SPLIT_STREAM, Sequence
from .solids import random_solid

GENERATOR = "continuum-taichi-mpm-2"  # 2: blobs and named objects besides superquadrics
PARTICLES = 4000
SOFT_PUSH = 0.25  # pushes on jelly and clay are scaled by this, from 0.5-4 body weights to 0.125-1


def sample_continuum(seed: int, split: str, nudge: float = 0.0) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, conditions and material from the seed;
    ``nudge`` adds that much initial velocity along x (``conditions.nudged``)."""
    rng = np.random.default_rng([seed, SPLIT_STREAM[split]])
    shape, vertices, faces = random_solid(rng, split)
    rotation = random_orientation(rng)
    vertices = vertices @ rotation.T
    vertices = vertices + [0.0, 0.0, drop_height(rng, vertices)]
    conditions = nudged(random_conditions(rng, vertices), nudge)
    model = MODELS[int(rng.integers(len(MODELS)))]
    volume = enclosed_volume(vertices, faces)
    material = _random_material(rng, model, conditions.mass / volume, volume ** (1 / 3), conditions.friction)
    # a push follows its patch of particles: pushed hard, the patch of a soft or weak body stretches past a
    # cell, the grid lets go of it and the push keeps it flying (measured: 3-7 m off in 3 of 24 sequences)
    if model == "sand":  # cohesionless sand also flies apart in free fall under any spin, and a pull plucks grains
        conditions = dataclasses.replace(conditions, angular_velocity=(0.0, 0.0, 0.0), forces=[], pull=None)
    elif model == "snow":  # brittle: no push
        conditions = dataclasses.replace(conditions, forces=[])
    else:
        conditions = softly_pushed(conditions)
    return mpm_sequence("continuum", shape, split, seed, vertices, faces, material, conditions, GENERATOR)


def softly_pushed(conditions):
    """``conditions`` with its pushes scaled by SOFT_PUSH, for a soft body's particles."""
    return dataclasses.replace(conditions, forces=[
        dataclasses.replace(f, vector=tuple(SOFT_PUSH * np.asarray(f.vector))) for f in conditions.forces])


def mpm_sequence(category, shape, split, seed, vertices, faces, material: ContinuumMaterial, conditions,
                 generator) -> Sequence:
    """Simulate a solid of ``material`` with PARTICLES particles and keep it as a sequence of
    ``category``, with its physical checks."""
    began = time.perf_counter()
    run = simulate_continuum(vertices, faces, material, conditions, particles=PARTICLES)
    seconds = time.perf_counter() - began

    checks = {"penetration": float(max(0.0, -run.positions[..., 2].min())), "spread": float(run.spread.max()),
              "finite": bool(np.isfinite(run.positions).all()), "seconds": seconds, "substeps": run.substeps}
    # jelly and clay keep their volume (von Mises flow is isochoric); snow compacts and sand dilates for real
    change = "volume_error" if material.model in ("jelly", "plasticine") else "volume_change"
    checks[change] = float(np.abs(run.volume_ratio - 1).max())
    if conditions.pull is not None:
        checks["hold_speed"] = run.hold_speed
    return Sequence(
        category=category, shape=shape, split=split, seed=seed, fps=conditions.fps,
        rest_vertices=vertices.astype(np.float32), faces=faces.astype(np.int32), positions=run.positions,
        masses=surface_masses(vertices, faces, conditions.mass), material=vars(material),
        conditions=describe(conditions), checks=checks, generator=generator)


def _random_material(rng, model, density, size, friction) -> ContinuumMaterial:
    """Artist ranges, stiffness as S = E / (rho g L): jelly wobbles at S = 10 and sags a few per cent at 60,
    nearly incompressible (a drop squeezes its volume by about v / c_p, so the Poisson ratio is high)."""
    def stiffness(low, high):
        return float(density * 9.81 * size * np.exp(rng.uniform(np.log(low), np.log(high))))

    if model == "jelly":
        return ContinuumMaterial(model="jelly", young=stiffness(10, 60), poisson=float(rng.uniform(0.45, 0.48)),
                                 friction=friction)
    if model == "snow":  # Stomakhin et al. 2013's ranges, softer (their 1.4e5 Pa, 400 kg/m^3 at 0.3 m is S ~ 120)
        return ContinuumMaterial(model="snow", young=stiffness(20, 80), poisson=float(rng.uniform(0.2, 0.3)),
                                 critical_compression=float(rng.uniform(1.5e-2, 3e-2)),
                                 critical_stretch=float(rng.uniform(5e-3, 1e-2)),
                                 hardening=float(rng.uniform(5.0, 10.0)), friction=friction)
    if model == "plasticine":  # yields at 0.2 to 2 times its own weight's pressure: slumps to holds its shape
        return ContinuumMaterial(model="plasticine", young=stiffness(30, 120), poisson=float(rng.uniform(0.3, 0.4)),
                                 yield_stress=float(density * 9.81 * size * rng.uniform(0.2, 2.0)), friction=friction)
    angle = float(rng.uniform(25.0, 40.0))  # the ground as rough as the sand itself: no sheet sliding away
    return ContinuumMaterial(model="sand", young=stiffness(30, 120), poisson=0.3, friction_angle=angle,
                             friction=max(friction, float(np.tan(np.radians(angle)))))

