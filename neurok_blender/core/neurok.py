"""NeuROK: the shipped model, and the neural simulation of any mesh on its learned coordinates.

    model = NeuROK.load(device="auto")                   # the shipped weights, no network
    result = model.simulate(vertices, faces, Conditions(frames=48, fps=24))
    result.positions                                     # (frames, V, 3) float32, world space

Per mesh: encode it once (prior mean and shape tokens), find its active subspace (k_q reduced
coordinates, ``reduction.py``), put its mass at material points (``mass_points.py``) and integrate
the Euler-Lagrange equation of q = (p, theta, s) (``neural.py``, ``dynamics.py``). Each category
has a default material measured against its reference simulator (``training/calibrate.py``) and
stored with the weights: the deformation's frequency, its damping rate and, for bodies that flow, the
strain at which they yield and the rolling resistance of the footprint they flatten where they land
(its lever arm over the radius of gyration, ``dynamics.LagrangianSystem.rolling_resistance``), for
bodies that never yield, the restitution of their own give at the contact (``contact_restitution``),
for soft solids, how soft the ground's spring is under them (``contact_stiffness``) and, for rigid
links on joints, the least damping ratio of their deformation (``damping_rate``);
Conditions.stiffness scales the potential (frequency by its square root; a solid's frequency also
follows its mass and size, ``solid_frequency_scale``) and, for materials whose
references damp as beta K (elastic solids), the damping rate with it; Conditions.damping scales the
damping rate and Conditions.plasticity divides the yield strain and multiplies the rolling resistance
(a body that yields sooner flattens more; linear is a choice, not a measurement).
"""

import dataclasses
import math
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .category import resolve_category
from .checkpoint import load_model, read_checkpoint, resolve_device
from .options import DEFORMABLE, Conditions
from .dynamics import Environment, LagrangianSystem
from .initial import fit_initial_state
from .mass_points import material_points
from .mesh import bbox_diagonal, check_mesh, signed_volume
from .mirror import find_mirrors
from .model import NeuROKModel, prepare_shape, shape_tensors
from .neural import NeuralBodyMap
from .reduction import MAX_COORDINATES, Subspace, active_subspace, drop_massless
from .trajectory import rollout
from .simulation import DTYPE, SimulationResult, environment, lifted_onto_ground, output_points, simulate

WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "neurok.pt"
PULL_ITERATIONS = 30
PULL_REGULARIZATION = 1e-4  # Levenberg-Marquardt damping relative to the mean diagonal of J^T J
GROUND_SAG = 0.01  # of the body's diagonal: the deepest a softened ground lets it sink at rest, g / k


@dataclasses.dataclass(frozen=True)
class CategoryMaterial:
    """A category's default material on the learned coordinates (stiffness = damping = 1)."""

    frequency: float  # Hz: small deformations oscillate at this frequency
    damping: float  # 1/s: mass-proportional Rayleigh rate on the deformation coordinates (at stiffness 1)
    yield_strain: float | None = None  # the rest shape flows past this strain (neural.py); None: never
    rolling_resistance: float = 0.0  # a yielding body's footprint lever arm over its radius of gyration
    restitution: float = 0.0  # added to the ground's for a body that never yields: the give its coordinates lack
    least_damping_ratio: float = 0.0  # of critical, 2 omega: the deformation never rings less damped (damping_rate)
    stiffness_proportional: bool = False  # the damping rate grows with the stiffness, D = beta K (damping_rate)
    mass_per_length: float | None = None  # kg/m: a solid's M / V^(1/3) at which frequency holds; None: any body's
    contact_stiffness_ratio: float | None = None  # the ground's spring per unit mass is at most this times omega^2

    def __post_init__(self):
        """Read from a checkpoint, so checked: a zero yield strain would divide the plastic return by zero."""
        if not (math.isfinite(self.frequency) and self.frequency > 0):
            raise ValueError(f"frequency must be positive, got {self.frequency!r}")
        if not (math.isfinite(self.damping) and self.damping >= 0):
            raise ValueError(f"damping must be non-negative, got {self.damping!r}")
        if self.yield_strain is not None and not (math.isfinite(self.yield_strain) and self.yield_strain > 0):
            raise ValueError(f"yield_strain must be positive or None, got {self.yield_strain!r}")
        if not (math.isfinite(self.rolling_resistance) and self.rolling_resistance >= 0):
            raise ValueError(f"rolling_resistance must be non-negative, got {self.rolling_resistance!r}")
        if not (math.isfinite(self.restitution) and 0 <= self.restitution < 1):
            raise ValueError(f"restitution must lie in [0, 1), got {self.restitution!r}")
        if not (math.isfinite(self.least_damping_ratio) and self.least_damping_ratio >= 0):
            raise ValueError(f"least_damping_ratio must be non-negative, got {self.least_damping_ratio!r}")
        if not isinstance(self.stiffness_proportional, bool):
            raise ValueError(f"stiffness_proportional must be True or False, got {self.stiffness_proportional!r}")
        if self.mass_per_length is not None and not (math.isfinite(self.mass_per_length) and self.mass_per_length > 0):
            raise ValueError(f"mass_per_length must be positive or None, got {self.mass_per_length!r}")
        if self.contact_stiffness_ratio is not None and not (
                math.isfinite(self.contact_stiffness_ratio) and self.contact_stiffness_ratio > 0):
            raise ValueError(f"contact_stiffness_ratio must be positive or None, got {self.contact_stiffness_ratio!r}")


def solid_frequency_scale(material: CategoryMaterial, vertices: np.ndarray, faces: np.ndarray, mass: float,
                          mass_at: str) -> float:
    """(omega / omega_material)^2 for a body of Conditions.stiffness 1: a solid of Young's modulus E,
    density rho and size L vibrates at omega = kappa sqrt(E / rho) / L, and with rho = M / L^3 (L the
    cube root of its volume V) omega^2 = kappa^2 E L / M. The material's frequency holds at its
    mass_per_length lambda_m = M / L of the bodies it was measured on, so a body of mass per length
    lambda = M / V^(1/3) rings at omega_m sqrt(lambda_m / lambda): twice as heavy, sqrt(2) slower;
    twice as large at the same density, twice as slow. 1 where the material holds for any body (no
    mass_per_length: sheets, links on joints) or the mass sits on the surface (no enclosed volume)."""
    if material.mass_per_length is None or mass_at != "volume":
        return 1.0
    return material.mass_per_length / mass_per_length(vertices, faces, mass)


def mass_per_length(vertices: np.ndarray, faces: np.ndarray, mass: float) -> float:
    """A closed body's M / V^(1/3) (kg/m), V its enclosed volume: how heavy it is for its size."""
    return mass / abs(signed_volume(vertices, faces)) ** (1 / 3)


def contact_stiffness(material: CategoryMaterial, frequency: float, default: float, floor: float = 0.0) -> float:
    """The ground's spring per unit mass (1/s^2) under a body that rings at ``frequency``: the engine's
    ``default`` (a stiff floor: 0.1 mm of sag under g at 1e5), softened to ratio omega^2 under a soft body
    but never below ``floor`` (``NeuROK.body``: a very soft setting must not let the body sink through).

    A soft solid lands on a patch of itself that gives: its contact stiffness k ~ E a (Hertz, a the
    patch's radius), which the solid frequency law (omega^2 = kappa^2 E L / M) puts at k / M ~ omega^2.
    Its few learned coordinates cannot squash a corner locally, so on the stiff floor a jelly landing on
    a corner was stopped there at once and flipped (a held-out jelly block's spin about y went from 1 to
    -5 rad/s within a frame and it left sideways at 1.5 m/s, where its reference kept its way and half
    its spin); the softer spring spreads the impact over the time the body takes to come down on it.
    The ratio is calibrated per category (``training/calibrate.py``); None keeps the default."""
    if material.contact_stiffness_ratio is None:
        return default
    return max(floor, min(default, material.contact_stiffness_ratio * (2 * math.pi * frequency) ** 2))


def ground_floor(gravity, vertices: np.ndarray) -> float:
    """The softest ground (1/s^2) under a body: it sinks at most GROUND_SAG of its diagonal at rest,
    g / k <= GROUND_SAG d (a 1 m body on the continuum's softest held-out ground, 6.7e3, sinks 1.5 mm;
    the floor, 981, only holds back settings far softer: a 100 kg, 1 m^3 body at stiffness 1e-3 would
    otherwise get 37 and sink 26 cm)."""
    return float(np.linalg.norm(gravity)) / (GROUND_SAG * bbox_diagonal(vertices))


def damping_rate(material: CategoryMaterial, damping: float, frequency: float) -> float:
    """The Rayleigh rate c (1/s) of the deformation coordinates: the material's scaled by
    Conditions.damping, and at least least_damping_ratio of critical damping, c >= zeta 2 omega with
    omega = 2 pi frequency, for any damping but 0, which turns all dissipation off (conservative runs).
    A stiffness-proportional material's rate grows with the stiffness: its references damp as D = beta K
    (MuJoCo flex), and on coordinates that all oscillate at omega, K = omega^2 M, so beta K is the
    mass-proportional c M with c = beta omega^2 = c_1 (frequency / material.frequency)^2, c_1 the rate
    at stiffness 1 (a body 9 times stiffer rings 3 times faster and decays 9 times faster).
    The floor is for rigid links on free joints: they store no energy in their joints, so a learned
    deformation that stands for them must take an impact's share without ringing and giving it back,
    however weak the joints' own damping (``training/calibrate.py``)."""
    if damping == 0:
        return 0.0
    rate = material.damping * damping
    if material.stiffness_proportional:
        rate *= (frequency / material.frequency) ** 2
    return max(rate, material.least_damping_ratio * 2 * (2 * math.pi * frequency))


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
    def load(cls, path=None, device: str = "auto") -> "NeuROK":
        """The model at ``path`` (default: the weights shipped inside the add-on); ValueError naming
        the file when it is missing, truncated, incompatible or uncalibrated. ``device`` is checked
        (CUDA absent falls back to the CPU with a warning); the rollout itself runs on the CPU."""
        path = Path(path) if path is not None else WEIGHTS
        resolve_device(device)
        payload = read_checkpoint(path)
        try:
            materials = {name: CategoryMaterial(**values) for name, values in payload.get("materials", {}).items()}
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: its calibrated materials cannot be read ({error})") from error
        return cls(load_model(path, "cpu"), materials, str(path))

    def body(self, vertices: np.ndarray, faces: np.ndarray, conditions: Conditions, category: str):
        """The learned body map of one mesh (world space) and what was chosen for it; no map when no
        reduced direction moves the mesh enough to be a coordinate (``reduction.drop_massless``)."""
        material = self.materials[category]
        shape = prepare_shape(vertices, faces, self.model.config)
        with torch.no_grad():
            features, query_features, _ = shape_tensors(self.model, shape)
            prior_mean, tokens = self.model.prior(features)
        active = active_subspace(self.model, prior_mean, tokens, query_features)
        mirrors = find_mirrors(vertices)
        points, masses, where = material_points(vertices, faces, conditions.mass, mirrors=mirrors)
        frequency = material.frequency * math.sqrt(
            conditions.stiffness * solid_frequency_scale(material, vertices, faces, conditions.mass, where))
        probe = NeuralBodyMap(self.model, shape, active, points, masses, frequency, DTYPE, "exact")
        _, jacobian = probe.jacobian(probe.rest_coordinates(), probe.mass_points)
        y_s = jacobian[0, :, :, 6:]
        subspace = drop_massless(active, torch.einsum("pik,p,pil->kl", y_s, probe.masses[0], y_s), conditions.mass,
                                 shape.scale)
        # one block of coordinates per mirror image (neural.py), MAX_COORDINATES in all: the blocks keep
        # the directions that move the most mass
        subspace = Subspace(subspace.basis[:max(1, MAX_COORDINATES // mirrors.size)], subspace.eigenvalues)
        captured = float(active.eigenvalues[:active.size].sum() / active.eigenvalues.sum().clamp_min(1e-30))
        # a body that never yields flattens no footprint, and one that does gives nothing back
        yield_strain, rolling, restitution = None, 0.0, material.restitution
        if material.yield_strain is not None and conditions.plasticity > 0:
            yield_strain = material.yield_strain / conditions.plasticity
            rolling, restitution = material.rolling_resistance * conditions.plasticity, 0.0
        ground = Environment.contact_stiffness  # without coordinates the rigid solver lands it on its stiff floor
        if subspace.size:
            ground = contact_stiffness(material, frequency, ground, ground_floor(conditions.gravity, vertices))
        info = {"category": category, "reduced_coordinates": subspace.size * mirrors.size, "mirrors": mirrors.size,
                "captured": captured, "mass_at": where,
                "frequency": frequency, "damping": damping_rate(material, conditions.damping, frequency),
                "yield_strain": yield_strain, "rolling_resistance": rolling,
                "contact_restitution": contact_restitution(conditions.restitution or 0.0, restitution),
                "impact_restitution": impact_restitution(conditions.restitution, category),
                "contact_stiffness": ground}
        if subspace.size == 0:
            return None, info
        return NeuralBodyMap(self.model, shape, subspace, points, masses, frequency, DTYPE, conditions.expansion,
                             yield_strain, mirrors=mirrors), info

    def simulate(self, vertices, faces, conditions: Conditions | None = None,
                 progress: Callable[[int, int], bool | None] | None = None, points=None) -> SimulationResult:
        """Simulate one mesh given in world space at t = 0; ``points`` (P, 3) as in ``simulate``.

        Raises ValueError for bad input, SimulationError if the rollout goes non-finite (naming the
        frame) and SimulationCancelled if ``progress`` returns False.
        """
        conditions = conditions or Conditions()
        v, f = check_mesh(vertices, faces)
        conditions.check(len(v))
        category, reason = resolve_category(conditions.category, v, f)
        if category == "rigid":
            return simulate(v, f, dataclasses.replace(conditions, category="rigid"), progress, points)
        v, points, conditions, lifted = lifted_onto_ground(v, points, conditions)
        kmap, info = self.body(v, f, conditions, category)
        info["lifted"], info["category_reason"] = lifted, reason
        if kmap is None:  # the model sees no deformation of this mesh worth a coordinate
            rigid = dataclasses.replace(conditions, category="rigid", pull=None)
            result = simulate(v, f, rigid, progress, points, contact=ground_contact(None, info))
            result.info = info
            return result
        env = dataclasses.replace(environment(conditions, v), damping=info["damping"], **ground_contact(kmap, info))
        system = LagrangianSystem(kmap, env)

        start = kmap.rest_coordinates()
        if conditions.pull is not None:
            start, info["pull_reached"] = pulled_coordinates(kmap, v[np.asarray(conditions.pull.vertices)],
                                                             np.asarray(conditions.pull.displacement, dtype=np.float64))
        mass_points = kmap.mass_points
        held = kmap.embed(start, mass_points)
        center = kmap.center
        omega = torch.as_tensor(conditions.angular_velocity, dtype=DTYPE).expand_as(held)
        velocities = torch.as_tensor(conditions.velocity, dtype=DTYPE) + torch.cross(omega, held - center, dim=-1)
        q0, q_dot0 = fit_initial_state(kmap, mass_points, held, velocities, kmap.masses, start=start)

        if points is None:
            out = output_points(v)
            kmap.attach(out, parts=kmap.shape.vertex_parts, output=True)
        else:
            out = output_points(points)
        trajectory = rollout(system, q0, q_dot0, conditions.frames, conditions.fps, conditions.integrator,
                             output_points=out, substeps=conditions.substeps, progress=progress)
        return SimulationResult.from_trajectory(trajectory, info)


def ground_contact(kmap: NeuralBodyMap | None, info: dict) -> dict:
    """How the ground meets a deforming body (``body``'s choices): the Environment fields that differ
    from a rigid body's, the restitution of its give, its footprint's rolling lever and the ground's
    spring under it; a body without coordinates (no map) keeps its give alone, on the stiff floor.
    ``benchmarks/contact_ablation.py`` lands a rigid body with them."""
    contact = {"restitution": info["contact_restitution"], "impact_restitution": info["impact_restitution"],
               "contact_stiffness": info["contact_stiffness"]}
    if kmap is not None:
        contact["rolling_lever"] = info["rolling_resistance"] * float(kmap.gyration)
    return contact


def contact_restitution(ground: float, body: float) -> float:
    """The restitution of a deforming body's contact: the ground's (Conditions.restitution) and the
    body's own, losses multiplied: 1 - e = (1 - e_ground)(1 - e_body), e = e_ground + (1 - e_ground) e_body.

    An elastic solid landing on a dead ground gives its impact back through the give of its own
    material near the contact, which the few learned coordinates cannot make: their contact stops a
    large share of the body at once. Measured (``benchmarks/elastic_bounce.py``), a ball of radius
    0.15 m dropped at 2 m/s onto a dead ground rebounds at 0.71 / 0.70 / 0.44 of its impact speed in
    the MuJoCo flex FEM reference (Young's modulus 10 / 50 / 400 kPa), at 0.61 / 0.53 / 0.24 on the
    learned coordinates with e_body = 0. The body's share is calibrated per category
    (``training/calibrate.py``); e_body = 0 leaves the ground's alone. The rule is a choice, measured
    only on a dead ground (the references'): on a ground that keeps everything it keeps everything too.
    """
    return ground + (1.0 - ground) * body


def impact_restitution(restitution: float | None, category: str) -> float | None:
    """The coefficient of restitution of the body's centre of mass (``LagrangianSystem.restitute``):
    the user's, but none for cloth, which is limp and keeps nothing of a landing; None (the dead
    ground of a replay) leaves the bounce to the contact and the material."""
    if restitution is None:
        return None
    return 0.0 if category == "cloth" else restitution


def pulled_coordinates(kmap: NeuralBodyMap, handle: np.ndarray, displacement: np.ndarray):
    """q with the handle's points moved by ``displacement`` through the deformation alone (the pose
    stays: the pull bends the body, it does not carry it), by Levenberg-Marquardt on

        s = argmin_s sum_h |x_h(s) - (xbar_h + d)|^2

    with s kept inside the wall (``neural.wall_radius``). Returns q and the share of the displacement
    the handle reached (1 = all of it; a learned space may not bend that far, and the rest of the way
    is not forced).
    """
    points = torch.as_tensor(handle, dtype=DTYPE)[None]
    kmap.attach(points)
    target = points + torch.as_tensor(displacement, dtype=DTYPE)
    q = kmap.rest_coordinates()
    for _ in range(PULL_ITERATIONS):
        x, jac = kmap.jacobian(q, points)
        js = jac[..., 6:].reshape(-1, jac.shape[-1] - 6)
        residual = (x - target).reshape(-1)
        normal = js.T @ js
        damping = PULL_REGULARIZATION * normal.diagonal().mean().clamp_min(1e-30)
        step = torch.linalg.solve(normal + damping * torch.eye(len(normal), dtype=DTYPE), -js.T @ residual)
        reduced = q[:, 6:] + step[None]
        reduced = reduced * torch.clamp(kmap.wall_radius / reduced.norm().clamp_min(1e-30), max=1.0)  # off the wall
        done = bool((reduced - q[:, 6:]).abs().max() < 1e-9)
        q = torch.cat([q[:, :6], reduced], 1)
        if done:
            break
    moved = (kmap.embed(q, points) - points).mean(1)[0].numpy()
    reach = float(moved @ displacement / max(displacement @ displacement, 1e-30))
    return q, reach
