"""Reference simulators: real physics engines that make the training data and judge the solver.

    from training.reference import reference_simulate
    positions = reference_simulate(vertices, faces, "elastic", conditions=Conditions(frames=48, ground_height=0.0))

The conditions are the solver's own ``neurok_blender.core.Conditions``, so both run on identical input.
"""

import dataclasses

import numpy as np

from neurok_blender.core import Conditions
from neurok_blender.core.mesh import check_mesh

AVAILABLE = ("elastic", "cloth", "continuum", "articulated")
STAR_SHAPED_LIMIT = 1000  # vertices: up to this a star-shaped surface gets deterministic layered tets


def reference_simulate(vertices, faces, category: str, material=None, conditions: Conditions | None = None) -> np.ndarray:
    """World positions (frames, V, 3) float32 of the mesh's vertices simulated by the category's engine.

    ``material=None`` is the category's default (``ElasticMaterial()``, ``ClothMaterial()``,
    ``ContinuumMaterial()`` (snow), ``ArticulatedMaterial()``). Cloth runs Blender's own simulator in this process (it resets bpy's scene).
    An elastic surface that is star-shaped about its centroid (and small) is filled with layered tets,
    deterministically; any other closed surface by TetWild, whose tets differ slightly from run to run.
    An articulated mesh is read as its loose parts, hinged where they touch along a line.
    """
    if category not in AVAILABLE:
        raise ValueError(f"unknown category {category!r}; available: {', '.join(AVAILABLE)}")
    vertices, faces = check_mesh(vertices, faces)
    if len(np.unique(faces)) != len(vertices):
        raise ValueError("some vertices belong to no triangle; remove loose vertices first")
    conditions = conditions or Conditions()
    conditions.check(len(vertices))
    if category == "elastic":
        from training.shapes.tetra import layered_tets

        from .elastic import simulate_elastic

        tets = None
        if len(vertices) <= STAR_SHAPED_LIMIT:
            try:
                tets = layered_tets(vertices, faces, layers=2)
            except ValueError:
                tets = None  # not star-shaped: TetWild
        return simulate_elastic(vertices, faces, material, conditions, tets=tets).positions
    if category == "cloth":
        from .cloth import simulate_cloth

        return simulate_cloth(vertices, faces, material, conditions).positions
    if category == "continuum":
        from .continuum import simulate_continuum

        return simulate_continuum(vertices, faces, material, conditions).positions
    from .articulate import articulate
    from .articulated import simulate_articulated

    obj, rows = articulate(vertices, faces)
    # forces given by vertex index follow their vertices into the object's own numbering
    forces = [dataclasses.replace(f, vertices=[int(rows[i]) for i in f.vertices]) if f.vertices is not None else f
              for f in conditions.forces]
    return simulate_articulated(obj, material, dataclasses.replace(conditions, forces=forces)).positions[:, rows]
