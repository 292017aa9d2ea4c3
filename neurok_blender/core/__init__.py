"""NeuROK's solver: torch and numpy only, never bpy (so it runs in any Python, inside Blender or not).

Names load on first use (PEP 562), so ``core.options`` (plain Python) imports without torch: the
add-on reads its choices from it when Blender starts, and torch loads with the first simulation.
"""

import importlib

_PUBLIC = {
    "CATEGORIES": "options", "Collider": "options", "Conditions": "options", "DEFORMABLE": "options", "Force": "options",
    "INTEGRATORS": "options", "METHODS": "options", "Pull": "options",
    "Environment": "dynamics", "LagrangianSystem": "dynamics",
    "KinematicMap": "kinematics", "RigidBodyMap": "rigid",
    "NeuROK": "neurok", "BodyMaterial": "material", "CategoryMaterial": "material",
    "SimulationCancelled": "trajectory", "SimulationError": "trajectory", "rollout": "trajectory",
    "Report": "simulation", "SimulationResult": "simulation", "simulate": "simulation",
    "LiveBody": "interactive", "live": "interactive", "simulate_scene": "scene",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)


def __dir__():
    return __all__
