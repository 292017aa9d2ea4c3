"""A reference material in the neural solver's terms: Conditions.stiffness, damping and plasticity, and
the ground's friction where the material carries it.

stiffness = damping = plasticity = 1 mean the category's default material (ElasticMaterial(), ...);
other materials scale them by the parameter that sets the deformation's frequency squared and its
damping, and a continuum body's model says whether it flows:

    elastic      stiffness = E / E_default                      damping = flex damping / default
                 by MPM (a jelly, ``corpus/soft.py``): damping = 0 (MPM has no viscosity)
    cloth        stiffness = (tension / vertex mass) / default   damping = air damping / default
    continuum    stiffness = E / E_default
                 snow (the default), plasticine, sand: damping = plasticity = 1
                 jelly: damping = plasticity = 0 (elastic, and MPM has no viscosity)
    articulated  stiffness = 1 (joints have no spring here)      damping = joint damping / default

The continuum's calibrated damping stands for what the plastic materials dissipate besides their
yield; a jelly has neither (on 8 training jelly sequences the mean vertex error over 2 s grows with
the damping: 0.507 at none, 0.530 at a quarter, 0.555 at the default).

The elastic, continuum and articulated references rub on the ground with their material's Coulomb
coefficient, which is the conditions' friction except for sand: its ground is at least as rough as
the sand itself (tan of its friction angle). Cloth's friction is Blender's, for colliders, in other
units: the conditions' stays.
"""

from .articulated import ArticulatedMaterial
from .cloth import ClothMaterial
from .continuum import ContinuumMaterial
from .elastic import ElasticMaterial


def material_conditions(category: str, material: dict) -> dict[str, float]:
    """Conditions' stiffness, damping, plasticity (and friction, module docstring) for a reference
    material given as its fields (a corpus sequence's record)."""
    scales = material_scales(category, material)
    return scales if category == "cloth" else {**scales, "friction": material["friction"]}


def material_scales(category: str, material: dict) -> dict[str, float]:
    """Conditions' stiffness, damping and plasticity for a reference material's fields."""
    if category == "elastic":
        default = ElasticMaterial()
        if material.get("model") == "jelly":
            return _scales(material["young"] / default.young, 0.0)
        return _scales(material["young"] / default.young, material["damping"] / default.damping)
    if category == "cloth":
        default = ClothMaterial()
        per_mass = material["tension"] / material["vertex_mass"]
        return _scales(per_mass / (default.tension / default.vertex_mass), material["air_damping"] / default.air_damping)
    if category == "continuum":
        plastic = 0.0 if material["model"] == "jelly" else 1.0  # a jelly neither flows nor dissipates as they do
        return _scales(material["young"] / ContinuumMaterial().young, plastic, plastic)
    if category == "articulated":
        return _scales(1.0, material["joint_damping"] / ArticulatedMaterial().joint_damping)
    raise ValueError(f"unknown category {category!r}")


def _scales(stiffness: float, damping: float, plasticity: float = 1.0) -> dict[str, float]:
    return {"stiffness": stiffness, "damping": damping, "plasticity": plasticity}
