"""NeuROK: the shipped model, and the learned coordinates of any mesh.

    model = NeuROK.load()                                # the shipped weights, no network
    result = model.simulate(vertices, faces, Conditions(frames=48, fps=24))
    result.positions                                     # (frames, V, 3) float32, world space
    live = model.live(vertices, faces, conditions)       # a frame per live.step(forces=[...])

Per mesh (``body``): encode it once (prior mean and shape tokens), find its active subspace (k_q
reduced coordinates, ``reduction.py``), put its mass at material points (``mass_points.py``), one
block of coordinates per mirror image (``mirror.py``), and fit its category's material to it
(``material.py``); ``simulation.simulate`` integrates the Euler-Lagrange equation of q = (p, theta, s)
on it (``neural.py``, ``dynamics.py``).
"""

import dataclasses
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .checkpoint import load_model, read_checkpoint
from .interactive import LiveBody, live
from .dynamics import Environment
from .mass_points import material_points
from .material import CategoryMaterial, body_material
from .mirror import find_mirrors
from .model import NeuROKModel, prepare_shape, shape_tensors
from .neural import NeuralBodyMap
from .options import DEFORMABLE, Conditions
from .reduction import MAX_COORDINATES, Subspace, active_subspace, drop_massless
from .simulation import DTYPE, Report, SimulationResult, simulate

WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "neurok.pt"


class NeuROK:
    """The trained model with its per-category materials; ``simulate`` runs any mesh."""

    def __init__(self, model: NeuROKModel, materials: dict[str, CategoryMaterial], source: str = "memory"):
        missing = set(DEFORMABLE) - set(materials)
        if missing:
            raise ValueError(f"{source} has no calibrated material for {sorted(missing)}: run python -m training.calibrate")
        self.model = model.cpu().eval()  # the engine differentiates on the CPU in float64
        self.materials = materials
        self.source = source

    @classmethod
    def load(cls, path=None) -> "NeuROK":
        """The model at ``path`` (default: the weights shipped inside the add-on), on the CPU where the
        engine differentiates it in float64; ValueError naming the file when it is missing,
        truncated, incompatible or uncalibrated."""
        path = Path(path) if path is not None else WEIGHTS
        payload = read_checkpoint(path)
        try:
            materials = {name: CategoryMaterial(**values) for name, values in payload.get("materials", {}).items()}
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: its calibrated materials cannot be read ({error})") from error
        return cls(load_model(path, "cpu"), materials, str(path))

    def body(self, vertices: np.ndarray, faces: np.ndarray, conditions: Conditions,
             category: str) -> tuple[NeuralBodyMap | None, Report]:
        """The learned body map of one mesh (world space) and what was chosen for it; no map when no
        reduced direction moves the mesh enough to be a coordinate (``reduction.drop_massless``)."""
        shape = prepare_shape(vertices, faces, self.model.config)
        with torch.no_grad():
            features, query_features, _ = shape_tensors(self.model, shape)
            prior_mean, tokens = self.model.prior(features)
        active = active_subspace(self.model, prior_mean, tokens, query_features)
        mirrors = find_mirrors(vertices)
        points, masses, where = material_points(vertices, faces, conditions.mass, mirrors=mirrors)
        material = body_material(self.materials[category], category, conditions, vertices, faces, where,
                                 Environment.contact_stiffness)
        probe = NeuralBodyMap(self.model, shape, active, points, masses, material.frequency, DTYPE, "exact")
        y_s = probe.rest_motion[0]
        subspace = drop_massless(active, torch.einsum("pik,p,pil->kl", y_s, probe.masses[0], y_s), conditions.mass,
                                 shape.scale)
        # one block of coordinates per mirror image (neural.py), MAX_COORDINATES in all: the blocks keep
        # the directions that move the most mass
        subspace = Subspace(subspace.basis[:max(1, MAX_COORDINATES // mirrors.size)], subspace.eigenvalues)
        if subspace.size == 0:  # without coordinates the body lands rigidly, on the stiff floor
            material = dataclasses.replace(material, contact_stiffness=Environment.contact_stiffness)
        report = Report(category, reduced_coordinates=subspace.size * mirrors.size, mirrors=mirrors.size,
                        captured=float(active.eigenvalues[:active.size].sum()
                                       / active.eigenvalues.sum().clamp_min(1e-30)),
                        mass_at=where, material=material)
        if subspace.size == 0:
            return None, report
        return NeuralBodyMap(self.model, shape, subspace, points, masses, material.frequency, DTYPE,
                             conditions.expansion, material.yield_strain, mirrors=mirrors), report

    def simulate(self, vertices, faces, conditions: Conditions | None = None,
                 progress: Callable[[int, int], bool | None] | None = None, points=None) -> SimulationResult:
        """``simulation.simulate`` with this model: any category, rigid included."""
        return simulate(vertices, faces, conditions, model=self, progress=progress, points=points)

    def live(self, vertices, faces, conditions: Conditions | None = None, points=None) -> LiveBody:
        """``interactive.live`` with this model: a body stepped one frame at a time as it is pushed."""
        return live(vertices, faces, conditions, model=self, points=points)
