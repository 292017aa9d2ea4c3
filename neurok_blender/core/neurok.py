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

import collections
import dataclasses
import hashlib
import math
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .articulation import find_joints
from .checkpoint import load_model, read_checkpoint
from .interactive import LiveBody, live
from .dynamics import Environment
from .mass_points import material_points
from .material import CategoryMaterial, body_material
from .mirror import find_mirrors
from .model import NeuROKModel, prepare_shape, shape_tensors
from .neural import WALL_MARGIN, NeuralBodyMap, shape_digest
from .options import DEFORMABLE, Conditions
from .reduction import MAX_COORDINATES, Subspace, active_subspace, drop_massless
from .simulation import DTYPE, Report, SimulationResult, simulate

WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "neurok.pt"
BUILDS_KEPT = 4  # meshes whose learned coordinates NeuROK.body keeps (a 10k-vertex mesh's: a few MB)


class NeuROK:
    """The trained model with its per-category materials and the margin of its latent wall
    (``neural.wall_radius``); ``simulate`` runs any mesh."""

    def __init__(self, model: NeuROKModel, materials: dict[str, CategoryMaterial], source: str = "memory",
                 wall_margin: float = WALL_MARGIN):
        missing = set(DEFORMABLE) - set(materials)
        if missing:
            raise ValueError(f"{source} has no calibrated material for {sorted(missing)}: run python -m training.calibrate")
        if not (isinstance(wall_margin, (int, float)) and math.isfinite(wall_margin) and wall_margin >= 0):
            raise ValueError(f"{source}: the wall margin must be a finite number of prior standard deviations >= 0, "
                             f"got {wall_margin!r}")
        self.model = model.cpu().eval()  # the engine differentiates on the CPU in float64
        self.materials = materials
        self.source = source
        self.wall_margin = float(wall_margin)
        self._builds = collections.OrderedDict()  # body's builds, least recently used first
        self._building = threading.Lock()

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
        return cls(load_model(path, "cpu").requires_grad_(False), materials, str(path),  # never trained here
                   payload.get("wall_margin", WALL_MARGIN))

    def body(self, vertices: np.ndarray, faces: np.ndarray, conditions: Conditions,
             category: str) -> tuple[NeuralBodyMap | None, Report]:
        """The learned body map of one mesh (world space) and what was chosen for it; no map when no
        reduced direction moves the mesh enough to be a coordinate (``reduction.drop_massless``).

        The coordinates depend on the mesh's shape, its mass and the expansion only: the last
        BUILDS_KEPT builds are kept, and a mesh simulated again (other velocities, forces, frames or
        material sliders) or a copy of it moved elsewhere gets a fresh map on them
        (``NeuralBodyMap.with_material``) instead of a new build."""
        v = np.asarray(vertices, np.float64)
        corner = v.min(0)  # from its lowest corner, in metres: a copy moved elsewhere is the same build,
        # one scaled is not
        triangles = hashlib.blake2b(np.ascontiguousarray(faces, np.int64).tobytes(), digest_size=16).hexdigest()
        articulated = category == "articulated"  # its parts matched and joined (articulation.py)
        key = (shape_digest(v, corner, 1.0), triangles, float(conditions.mass), conditions.expansion, articulated)
        with self._building:  # Blender solves on a thread while live mode may build on the main one
            if key not in self._builds:
                self._builds[key] = (corner, *self._build(vertices, faces, conditions, articulated))
                while len(self._builds) > BUILDS_KEPT:
                    self._builds.popitem(last=False)
            self._builds.move_to_end(key)
            built_at, built, where, mirrors, captured = self._builds[key]
        material = body_material(self.materials[category], category, conditions, vertices, faces, where,
                                 Environment.contact_stiffness)
        if built is None:  # without coordinates the body lands rigidly, on the stiff floor
            material = dataclasses.replace(material, contact_stiffness=Environment.contact_stiffness)
            return None, Report(category, mirrors=mirrors, captured=captured, mass_at=where, material=material)
        report = Report(category, reduced_coordinates=built.reduced_size, mirrors=mirrors, captured=captured,
                        mass_at=where, material=material, joints=0 if built.parts is None else built.joint_pairs)
        # a hinged body's joints hold at the category's own frequency at least, whatever its Stiffness
        joint_frequency = max(material.frequency, self.materials[category].frequency)
        return built.with_material(material.frequency, material.yield_strain, corner - built_at, joint_frequency), report

    def _build(self, vertices, faces, conditions: Conditions, articulated: bool):
        """(map or None, where the mass is, mirror images, share of the active subspace's trace kept)
        for ``body``: the map's material is set by its caller. An ``articulated`` body of several loose
        parts gets the joint-free potential (``articulation.py``)."""
        shape = prepare_shape(vertices, faces, self.model.config)
        several = articulated and bool((shape.vertex_parts != shape.vertex_parts[0]).any())
        joints = find_joints(vertices, faces, shape.vertex_parts) if several else None
        with torch.no_grad():
            features, query_features, _ = shape_tensors(self.model, shape)
            prior_mean, tokens = self.model.prior(features)
        active = active_subspace(self.model, prior_mean, tokens, query_features)
        mirrors = find_mirrors(vertices)
        points, masses, where, parts = material_points(vertices, faces, conditions.mass, mirrors=mirrors)
        probe = NeuralBodyMap(self.model, shape, active, points, masses, 1.0, DTYPE, condense=False, order=1,
                              mass_parts=parts)
        y_s = probe.rest_motion[0]
        subspace = drop_massless(active, torch.einsum("pik,p,pil->kl", y_s, probe.masses[0], y_s), conditions.mass,
                                 shape.scale)
        # one block of coordinates per mirror image (neural.py), MAX_COORDINATES in all: the blocks keep
        # the directions that move the most mass
        subspace = Subspace(subspace.basis[:max(1, MAX_COORDINATES // mirrors.size)], subspace.eigenvalues)
        captured = float(active.eigenvalues[:active.size].sum() / active.eigenvalues.sum().clamp_min(1e-30))
        built = None if subspace.size == 0 else NeuralBodyMap(
            self.model, shape, subspace, points, masses, 1.0, DTYPE, conditions.expansion, mirrors=mirrors,
            joints=joints, wall_margin=self.wall_margin, mass_parts=parts)
        return built, where, mirrors.size, captured

    def simulate(self, vertices, faces, conditions: Conditions | None = None,
                 progress: Callable[[int, int], bool | None] | None = None, points=None) -> SimulationResult:
        """``simulation.simulate`` with this model: any category, rigid included."""
        return simulate(vertices, faces, conditions, model=self, progress=progress, points=points)

    def live(self, vertices, faces, conditions: Conditions | None = None, points=None) -> LiveBody:
        """``interactive.live`` with this model: a body stepped one frame at a time as it is pushed."""
        return live(vertices, faces, conditions, model=self, points=points)
