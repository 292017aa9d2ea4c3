"""What the user asks for: the physical conditions of one simulation, checked before anything runs.

Plain Python and numpy (no torch), so the add-on reads its choices from here when Blender starts.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .mesh import is_closed

CATEGORIES = {
    "auto": "Read the mesh: an open sheet is cloth, solid parts of comparable size an articulated object, "
            "any other solid (small openings or small extra parts included) elastic; the report says why",
    "elastic": "A volumetric elastic body, jelly to rubber",
    "cloth": "Cloth or a thin shell",
    "continuum": "A soft continuum body: snow, clay, sand",
    "articulated": "Its loose parts, joined where they touch and free to turn there (hinges)",
    "rigid": "No deformation: the body only moves and turns (needs no trained model)",
}
DEFORMABLE = ("elastic", "cloth", "continuum", "articulated")  # the categories the learned model moves

AUTO = "auto"  # the default integrator, the implicit step (trajectory.choose_method)
INTEGRATORS = {
    AUTO: "The implicit step (default)",
    "leapfrog": "Symplectic Stoermer-Verlet, damping implicit: energy error stays bounded over long "
                "conservative runs, and any damping is stable",
    "implicit": "Implicit trapezoidal step: contact, pins and damping at "
                "any stiffness; the fastest",
    "rk4": "Classic Runge-Kutta, 4th order, fixed step: the most accurate fixed step in flight; "
           "impacts cost it more steps and energy error than the implicit step",
    "midpoint": "Explicit midpoint, 2nd order, fixed step",
    "heun3": "Heun, 3rd order, fixed step",
    "euler": "Forward Euler, 1st order: for comparison only",
    "dopri5": "Dormand-Prince 5(4), adaptive step",
    "bosh3": "Bogacki-Shampine 3(2), adaptive step",
    "dopri8": "Dormand-Prince 8, adaptive step",
}
METHODS = tuple(INTEGRATORS)

EXPANSIONS = ("quadratic", "exact")  # the decoder in the dynamics: its second-order expansion, or itself


@dataclass
class Force:
    """A force in newtons on the body during frames [start_frame, end_frame), world axes.

    ``point`` is a world position at frame 0, or several (k, 3) sharing the force evenly: the body
    points there are pushed and the force follows them. ``vertices`` spreads it over mesh vertices.
    """

    vector: tuple[float, float, float]
    point: tuple[float, float, float] | np.ndarray | None = None
    vertices: list[int] | None = None
    start_frame: float = 0.0
    end_frame: float = 1.0

    def application_points(self, vertices: np.ndarray) -> np.ndarray:
        """The world points (k, 3) at frame 0 that share the force evenly."""
        if self.vertices is not None:
            return vertices[np.asarray(self.vertices)]
        return np.atleast_2d(np.asarray(self.point, dtype=np.float64))

    def share(self, vertices: np.ndarray) -> np.ndarray:
        """The force on each application point, N (3,)."""
        return np.asarray(self.vector, dtype=np.float64) / len(self.application_points(vertices))

    def check(self, vertex_count: int, name: str = "force") -> None:
        """Raise ValueError naming the first bad field (``name``: how the caller calls this force)."""
        _vector(f"{name}.vector", self.vector)
        if (self.point is None) == (self.vertices is None):
            raise ValueError(f"{name}: give exactly one of point or vertices")
        if self.point is not None:
            points = np.atleast_2d(np.asarray(self.point, dtype=np.float64))
            if points.ndim != 2 or points.shape[1] != 3 or len(points) == 0 or not np.isfinite(points).all():
                raise ValueError(f"{name}.point must be 3 finite numbers or a (k, 3) array of them")
        else:
            idx = np.asarray(self.vertices)
            if idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError(f"{name}.vertices must be a non-empty list of vertex indices")
            if idx.min() < 0 or idx.max() >= vertex_count:
                raise ValueError(f"{name}.vertices must lie in [0, {vertex_count - 1}]")
        if not (math.isfinite(self.start_frame) and math.isfinite(self.end_frame)):
            raise ValueError(f"{name}: start_frame and end_frame must be finite")
        if self.end_frame <= self.start_frame:
            raise ValueError(f"{name}: end_frame ({self.end_frame}) must be after start_frame ({self.start_frame})")


@dataclass
class Pull:
    """Pull and release: the body starts held with its ``vertices`` moved by ``displacement`` (m, world).

    The hold is a static deformation with the handle displaced relative to the rest of the body: the
    pull is balanced by a rigid acceleration field, so it bends the body without moving or turning it
    as a whole. The body is let go at frame 0, from rest (plus any initial velocity).
    """

    vertices: list[int]
    displacement: tuple[float, float, float]


@dataclass
class Collider:
    """An obstacle: a triangle mesh the body pushes against (``obstacles.py``), still or moving.

    ``vertices`` is its world positions (V, 3) m, or (K, V, 3) at each frame 0..K-1 of the simulation
    for an animated or deforming one (held at the last past K). Its surface sits ``thickness`` m out
    of the triangles (Blender's Collision "Outer" thickness). A contact with it has the Coulomb
    coefficient sqrt(mu_body mu_collider), so either side's setting counts and either at 0 makes it
    frictionless.
    """

    vertices: np.ndarray
    faces: np.ndarray
    friction: float = 0.5
    thickness: float = 0.02
    name: str = "collider"

    def frames(self) -> np.ndarray:
        """Its positions (K, V, 3) float64, one row per frame."""
        positions = np.asarray(self.vertices, dtype=np.float64)
        return positions[None] if positions.ndim == 2 else positions

    @property
    def closed(self) -> bool:
        return is_closed(self.faces)

    def check(self) -> None:
        """Raise ValueError naming the first bad field."""
        positions = self.frames()
        faces = np.asarray(self.faces)
        if positions.ndim != 3 or positions.shape[2] != 3 or positions.shape[0] == 0 or positions.shape[1] == 0 \
                or not np.isfinite(positions).all():
            raise ValueError(f"collider {self.name!r}: vertices must be a finite (V, 3) or (K, V, 3) array")
        if faces.ndim != 2 or faces.shape[1] != 3 or len(faces) == 0 or not np.issubdtype(faces.dtype, np.integer):
            raise ValueError(f"collider {self.name!r}: faces must be a non-empty (T, 3) integer array")
        if faces.min() < 0 or faces.max() >= positions.shape[1]:
            raise ValueError(f"collider {self.name!r}: faces must index its {positions.shape[1]} vertices")
        _non_negative(f"collider {self.name!r} friction", self.friction)
        _positive(f"collider {self.name!r} thickness", self.thickness)


@dataclass
class Conditions:
    """Frames are counted from 0 (the initial state, t = 0); frame k shows t = k / fps.

    Units are SI: m, s, kg, N, rad/s. ``substeps=None`` picks the step from the stiffest spring.
    ``category`` is a hint for the neural solver ("auto" reads the mesh, ``category.py``: an open
    sheet is cloth, solid parts of comparable size articulated, any other solid elastic); "rigid"
    keeps the rigid-only coordinates. ``stiffness`` and
    ``damping`` scale the category's default material (1 = the reference simulator's default; a
    solid's deformation also rings slower the heavier or larger it is, ``material.solid_frequency_scale``);
    ``plasticity`` divides the strain at which a category that flows yields (0: it never does;
    categories whose references spring back never yield). ``restitution`` e is the body's coefficient of
    restitution against the ground: its centre of mass leaves each impact at most e times as fast as it
    came (dropped from h, it bounces back to e^2 h; ``LagrangianSystem.restitute``); cloth keeps none
    of it. None is the reference simulators' dead ground: the body bounces as its material gives
    (``material.contact_restitution``). ``integrator="auto"`` runs the implicit
    step, its steps set by the motion, not the stiff springs that hold it (``trajectory.choose_method``).
    ``pins`` are vertices held where they are at frame 0 for the whole run, each on a stiff spring
    (``Environment.pin_stiffness``): one pin is a ball joint, two a hinge; with ``pin_path`` they are
    held where it says at each frame instead (linear between frames, the last held): a flag on a
    moving pole, a lamp swung by its cord. ``colliders`` are obstacles
    beside the ground (``Collider``).
    """

    frames: int = 48
    fps: float = 24.0
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    ground_height: float | None = None
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    forces: list[Force] = field(default_factory=list)
    pull: Pull | None = None
    pins: list[int] | None = None  # vertices held where they are at frame 0, the whole run
    pin_path: np.ndarray | None = None  # (K, len(pins), 3) where the pins are held at frames 0..K-1 (m, world)
    colliders: list[Collider] = field(default_factory=list)
    mass: float = 1.0
    friction: float = 0.5
    restitution: float | None = 0.3
    drag: float = 0.0
    category: str = "auto"
    stiffness: float = 1.0
    damping: float = 1.0
    plasticity: float = 1.0
    integrator: str = "auto"
    substeps: int | None = None
    expansion: str = "quadratic"  # EXPANSIONS: "quadratic" (fast) or "exact"
    sleep: bool = True  # a body at rest stops being integrated until a force acts (trajectory.Run)

    def check(self, vertex_count: int) -> None:
        """Raise ValueError naming the first bad field."""
        if not (isinstance(self.frames, (int, np.integer)) and self.frames >= 2):
            raise ValueError(f"frames must be an integer of at least 2, got {self.frames!r}")
        _positive("fps", self.fps)
        _positive("mass", self.mass)
        for name in ("gravity", "velocity", "angular_velocity"):
            _vector(name, getattr(self, name))
        if self.ground_height is not None and not math.isfinite(self.ground_height):
            raise ValueError(f"ground_height must be finite or None, got {self.ground_height}")
        _non_negative("friction", self.friction)
        _non_negative("drag", self.drag)
        _positive("stiffness", self.stiffness)
        _non_negative("damping", self.damping)
        _non_negative("plasticity", self.plasticity)
        if self.restitution is not None and not (0.0 <= self.restitution <= 1.0):
            raise ValueError(f"restitution must lie in [0, 1] or be None, got {self.restitution}")
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}; choose one of {', '.join(CATEGORIES)}")
        if self.integrator not in METHODS:
            raise ValueError(f"unknown integrator {self.integrator!r}; choose one of {', '.join(METHODS)}")
        if not isinstance(self.sleep, (bool, np.bool_)):
            raise ValueError(f"sleep must be True or False, got {self.sleep!r}")
        if self.expansion not in EXPANSIONS:
            raise ValueError(f"unknown expansion {self.expansion!r}; choose one of {', '.join(EXPANSIONS)}")
        if self.substeps is not None and not (isinstance(self.substeps, (int, np.integer)) and self.substeps >= 1):
            raise ValueError(f"substeps must be a positive integer or None, got {self.substeps!r}")
        for i, force in enumerate(self.forces):
            force.check(vertex_count, f"forces[{i}]")
        if self.pull is not None:
            _check_pull(self.pull, vertex_count)
        for collider in self.colliders:
            collider.check()
        if self.pins is not None:
            idx = np.asarray(self.pins)
            if idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError("pins must be a non-empty list of vertex indices, or None")
            if idx.min() < 0 or idx.max() >= vertex_count:
                raise ValueError(f"pins must lie in [0, {vertex_count - 1}]")
        if self.pin_path is not None:
            path = np.asarray(self.pin_path, dtype=np.float64)
            count = 0 if self.pins is None else len(self.pins)
            if self.pins is None or path.ndim != 3 or path.shape[0] == 0 or path.shape[1:] != (count, 3) \
                    or not np.isfinite(path).all():
                raise ValueError(f"pin_path must be a finite (K, {count}, 3) array of where the pins are held at "
                                 "each frame, with pins given")


def _check_pull(pull, vertex_count):
    _vector("pull.displacement", pull.displacement)
    idx = np.asarray(pull.vertices)
    if idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("pull.vertices must be a non-empty list of vertex indices")
    if idx.min() < 0 or idx.max() >= vertex_count:
        raise ValueError(f"pull.vertices must lie in [0, {vertex_count - 1}]")
    if len(np.unique(idx)) == vertex_count:
        raise ValueError("pull.vertices must leave some vertices free: pulling all of them only moves the body")


def _vector(name, value):
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")


def _positive(name, value):
    if not (isinstance(value, (int, float, np.number)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _non_negative(name, value):
    if not (isinstance(value, (int, float, np.number)) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
