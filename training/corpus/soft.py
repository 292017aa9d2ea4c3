"""Soft elastic sequences, jelly to soft rubber, by MLS-MPM: the elastic category's fast generator.

The same solid as the FEM generator (``elastic.py``: a superquadric, its pose, throw, spin, push
and pull) as fixed-corotated elastic particles (``training.reference.continuum``, model "jelly").
The step is set by the pressure wave, dt ~ dx / sqrt(E / rho), so the cost grows with the square
root of the stiffness: the draw spans the range where a body visibly changes shape, from a jelly
that wobbles to a rubber that sags a few per mille, E = S rho g L with the softness number S
log-uniform in SOFTNESS (L the cube root of the volume). Stiffer solids barely deform; the FEM
generator covers them.
"""

import numpy as np

from training.reference.continuum import ContinuumMaterial
from training.shapes.geometry import enclosed_volume
from training.shapes.solids import superquadric

from .conditions import drop_height, nudged, random_conditions, random_orientation
from .continuum import mpm_sequence, softly_pushed
from .sequence import HELDOUT_SHAPES, SPLIT_STREAM, Sequence

GENERATOR = "elastic-taichi-mpm-1"
SOFTNESS = (10.0, 300.0)  # E / (rho g L): a jelly that wobbles on landing to a rubber that sags 0.3 %
POISSON = (0.45, 0.48)  # rubber and gels are nearly incompressible (a drop squeezes them by about v / c_p)
STREAM = 7  # a third seed word: not the FEM generator's draws for the same seed


def sample_soft(seed: int, split: str, nudge: float = 0.0) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, conditions and material from the seed;
    ``nudge`` adds that much initial velocity along x (``conditions.nudged``)."""
    rng = np.random.default_rng([seed, SPLIT_STREAM[split], STREAM])
    shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
    vertices, faces = superquadric(np.random.default_rng(shape_seed))
    vertices = vertices @ random_orientation(rng).T
    vertices = vertices + [0.0, 0.0, drop_height(rng, vertices)]
    conditions = softly_pushed(nudged(random_conditions(rng, vertices), nudge))
    volume = enclosed_volume(vertices, faces)
    softness = float(np.exp(rng.uniform(*np.log(SOFTNESS))))
    material = ContinuumMaterial(model="jelly", young=softness * conditions.mass / volume * 9.81 * volume ** (1 / 3),
                                 poisson=float(rng.uniform(*POISSON)), friction=conditions.friction)
    return mpm_sequence("elastic", f"superquadric-{shape_seed}", split, seed, vertices, faces, material, conditions,
                        GENERATOR)
