"""NeuROK's solver: torch and numpy only, never bpy (so it runs in any Python, inside Blender or not)."""

from .conditions import CATEGORIES, Conditions, Force, Pull
from .dynamics import Environment, LagrangianSystem
from .integrators import METHODS
from .kinematics import KinematicMap
from .neurok import NeuROK
from .rigid import RigidBodyMap
from .rollout import SimulationCancelled, SimulationError, rollout
from .simulate import SimulationResult, simulate

__all__ = [
    "CATEGORIES", "Conditions", "Environment", "Force", "KinematicMap", "LagrangianSystem", "METHODS",
    "NeuROK", "Pull", "RigidBodyMap", "SimulationCancelled", "SimulationError", "SimulationResult", "rollout", "simulate",
]
