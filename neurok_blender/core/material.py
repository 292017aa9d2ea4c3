"""A category's material on the learned coordinates, and the laws that fit it to one body.

``CategoryMaterial`` is what the calibration measured against a category's reference simulator
(``training/calibrate.py``, stored with the weights, for stiffness = damping = plasticity = 1).
``body_material`` turns it into a ``BodyMaterial``: the numbers one body of a given mass, size and
user settings integrates with. The evidence behind each law is in docs/physics.md.
"""

import dataclasses
import math

import numpy as np

from .mesh import bbox_diagonal, signed_volume
from .options import Conditions

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
        _check(self.frequency > 0, "frequency must be positive", self.frequency)
        _check(self.damping >= 0, "damping must be non-negative", self.damping)
        _check(self.yield_strain is None or self.yield_strain > 0, "yield_strain must be positive or None",
               self.yield_strain)
        _check(self.rolling_resistance >= 0, "rolling_resistance must be non-negative", self.rolling_resistance)
        _check(0 <= self.restitution < 1, "restitution must lie in [0, 1)", self.restitution)
        _check(self.least_damping_ratio >= 0, "least_damping_ratio must be non-negative", self.least_damping_ratio)
        if not isinstance(self.stiffness_proportional, bool):
            raise ValueError(f"stiffness_proportional must be True or False, got {self.stiffness_proportional!r}")
        _check(self.mass_per_length is None or self.mass_per_length > 0, "mass_per_length must be positive or None",
               self.mass_per_length)
        _check(self.contact_stiffness_ratio is None or self.contact_stiffness_ratio > 0,
               "contact_stiffness_ratio must be positive or None", self.contact_stiffness_ratio)


def _check(holds: bool, message: str, value) -> None:
    finite = value is None or isinstance(value, bool) or math.isfinite(value)
    if not (finite and holds):
        raise ValueError(f"{message}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class BodyMaterial:
    """What one body integrates with: its category's material under the user's settings."""

    frequency: float  # Hz: its deformation rings at omega = 2 pi frequency (LagrangianSystem's potential)
    damping: float  # 1/s: the Rayleigh rate c of its deformation coordinates
    yield_strain: float | None  # its rest shape flows past this strain; None: never
    rolling_resistance: float  # its footprint's lever arm over its radius of gyration
    contact_restitution: float  # of its contact's spring and dashpot (contact_restitution)
    impact_restitution: float | None  # Newton's law for its centre of mass over each impact; None: none
    contact_stiffness: float  # 1/s^2: the ground's spring per unit mass under it

    def ground_contact(self, gyration: float | None) -> dict:
        """The Environment fields in which the ground meets this body differently from a plain rigid
        one; ``gyration`` (m) the radius of gyration of its learned coordinates, None for a body that has
        none and moves rigidly (it keeps its give, without a footprint)."""
        contact = {"restitution": self.contact_restitution, "impact_restitution": self.impact_restitution,
                   "contact_stiffness": self.contact_stiffness}
        if gyration is not None:
            contact["rolling_lever"] = self.rolling_resistance * gyration
        return contact


def body_material(material: CategoryMaterial, category: str, conditions: Conditions, vertices: np.ndarray,
                  faces: np.ndarray, mass_at: str, stiff_ground: float) -> BodyMaterial:
    """``material`` for one body of ``category`` under ``conditions``, its mass at ``mass_at``
    ("volume" or "surface", ``mass_points.material_points``); ``stiff_ground`` the engine's floor
    spring (1/s^2) that a soft solid's ground is softened from.

    A body that never yields flattens no footprint and gives back its material's share of an impact;
    one that yields gives nothing back and resists rolling.
    """
    frequency = material.frequency * math.sqrt(
        conditions.stiffness * solid_frequency_scale(material, vertices, faces, conditions.mass, mass_at))
    yield_strain, rolling, give = None, 0.0, material.restitution
    if material.yield_strain is not None and conditions.plasticity > 0:
        yield_strain = material.yield_strain / conditions.plasticity
        rolling, give = material.rolling_resistance * conditions.plasticity, 0.0
    return BodyMaterial(
        frequency=frequency, damping=damping_rate(material, conditions.damping, frequency),
        yield_strain=yield_strain, rolling_resistance=rolling,
        contact_restitution=contact_restitution(conditions.restitution or 0.0, give),
        impact_restitution=impact_restitution(conditions.restitution, category),
        contact_stiffness=contact_stiffness(material, frequency, stiff_ground, ground_floor(conditions.gravity, vertices)))


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
    ``default`` (a stiff floor), softened to ratio omega^2 under a soft body but never below ``floor``
    (``ground_floor``). A soft solid lands on a patch of itself that gives, k ~ E a (Hertz, a the
    patch's radius), which the frequency law puts at k / M ~ omega^2; its few learned coordinates
    cannot squash a corner locally, and the softer spring spreads the impact over the time the body
    takes to come down on it. None as the ratio keeps the default."""
    if material.contact_stiffness_ratio is None:
        return default
    return max(floor, min(default, material.contact_stiffness_ratio * (2 * math.pi * frequency) ** 2))


def ground_floor(gravity, vertices: np.ndarray) -> float:
    """The softest ground (1/s^2) under a body: at rest it sinks at most GROUND_SAG of its diagonal,
    g / k <= GROUND_SAG d."""
    return float(np.linalg.norm(gravity)) / (GROUND_SAG * bbox_diagonal(vertices))


def damping_rate(material: CategoryMaterial, damping: float, frequency: float) -> float:
    """The Rayleigh rate c (1/s) of the deformation coordinates: the material's scaled by
    Conditions.damping, and at least least_damping_ratio of critical damping, c >= zeta 2 omega with
    omega = 2 pi frequency, for any damping but 0, which turns all dissipation off (conservative runs).

    A stiffness-proportional material damps as D = beta K (its references, MuJoCo flex), and on
    coordinates that all oscillate at omega, K = omega^2 M, so beta K is the mass-proportional c M with
    c = beta omega^2 = c_1 (frequency / material.frequency)^2, c_1 the rate at stiffness 1. The floor is
    for rigid links on free joints: they store nothing in their joints, so a learned deformation that
    stands for them must take an impact's share without ringing and giving it back."""
    if damping == 0:
        return 0.0
    rate = material.damping * damping
    if material.stiffness_proportional:
        rate *= (frequency / material.frequency) ** 2
    return max(rate, material.least_damping_ratio * 2 * (2 * math.pi * frequency))


def contact_restitution(ground: float, body: float) -> float:
    """The restitution of a deforming body's contact: the ground's (Conditions.restitution) and the
    body's own give, losses multiplied: 1 - e = (1 - e_ground)(1 - e_body), e = e_ground + (1 - e_ground) e_body.
    The few learned coordinates cannot give near the contact as the material does, so the body's share
    is calibrated per category; e_body = 0 leaves the ground's alone."""
    return ground + (1.0 - ground) * body


def impact_restitution(restitution: float | None, category: str) -> float | None:
    """The coefficient of restitution of the body's centre of mass (``LagrangianSystem.restitute``):
    the user's, but none for cloth, which is limp and keeps nothing of a landing; None (the dead
    ground of a replay) leaves the bounce to the contact and the material."""
    if restitution is None:
        return None
    return 0.0 if category == "cloth" else restitution
