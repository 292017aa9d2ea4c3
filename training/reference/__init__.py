"""Reference simulators: real physics engines that make the training data and judge the solver.

    from training.reference import reference_simulate
    positions = reference_simulate(vertices, faces, "elastic", conditions=Conditions(frames=48, ground_height=0.0))

The conditions are the solver's own ``neurok_blender.core.Conditions``, so both run on identical input.
"""

import numpy as np

from neurok_blender.core import Conditions

AVAILABLE = ("elastic", "articulated")


def reference_simulate(vertices, faces, category: str, material=None, conditions: Conditions | None = None) -> np.ndarray:
    """World positions (frames, V, 3) float32 of the mesh's vertices simulated by the category's engine.

    ``material=None`` is the category's default (``ElasticMaterial()``, ``ArticulatedMaterial()``).
    An articulated mesh is read as its loose parts, hinged where they touch along a line.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    conditions = conditions or Conditions()
    if category == "elastic":
        from .elastic import simulate_elastic

        return simulate_elastic(vertices, faces, material, conditions).positions
    if category == "articulated":
        from .articulate import articulate
        from .articulated import simulate_articulated

        obj, rows = articulate(vertices, faces)
        return simulate_articulated(obj, material, conditions).positions[:, rows]
    if category in ("cloth", "continuum"):
        raise ValueError(f"the {category} reference engine is not built yet; available: {', '.join(AVAILABLE)}")
    raise ValueError(f"unknown category {category!r}; available: {', '.join(AVAILABLE)}")
