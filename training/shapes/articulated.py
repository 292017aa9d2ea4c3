"""Procedural articulated objects: rigid parts (closed meshes) joined by hinge and slide joints.

Each builder takes a numpy Generator and returns an ``ArticulatedObject`` in its rest pose, world
space, near the origin (callers place it). Joint limits are relative to the rest pose. Hinges sit on
part edges, and every hinge's range is cut to where its two parts stop overlapping (``swept_limits``).
"""

from dataclasses import dataclass, field

import numpy as np

from neurok_blender.core.mesh import box_mesh

from .geometry import axis_rotation as _rotation
from neurok_blender.core.mesh import winding_number

from .geometry import surface_distance, surface_samples

SWEEP_STEP = np.radians(1.0)
SWEEP_SAMPLES = 600  # surface points per part, on top of its vertices
INSIDE = 0.6  # winding number above which a point is inside (0.5 is on the surface)


@dataclass
class Joint:
    parent: int
    child: int
    kind: str  # "hinge", "slide" or "fixed" (welded)
    anchor: np.ndarray  # (3,) world position at rest
    axis: np.ndarray  # (3,) unit, world at rest
    limits: tuple[float, float] | None = None  # rad (hinge) or m (slide), relative to rest


@dataclass
class ArticulatedObject:
    name: str
    parts: list[tuple[np.ndarray, np.ndarray]]  # (vertices (V, 3), triangles (F, 3)) per part, world at rest
    joints: list[Joint] = field(default_factory=list)

    def moved(self, rotation: np.ndarray, translation) -> "ArticulatedObject":
        """The same object rigidly moved: x -> R x + t for parts, anchors and axes."""
        t = np.asarray(translation, dtype=np.float64)
        parts = [(v @ rotation.T + t, f) for v, f in self.parts]
        joints = [Joint(j.parent, j.child, j.kind, rotation @ j.anchor + t, rotation @ j.axis, j.limits)
                  for j in self.joints]
        return ArticulatedObject(self.name, parts, joints)

    def mesh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One mesh of all parts: vertices, triangles and the part id of every vertex."""
        offsets = np.cumsum([0] + [len(v) for v, _ in self.parts])
        vertices = np.concatenate([v for v, _ in self.parts])
        faces = np.concatenate([f + o for (_, f), o in zip(self.parts, offsets)])
        part_ids = np.repeat(np.arange(len(self.parts)), np.diff(offsets))
        return vertices, faces, part_ids


def _part(size, center, rotation=None):
    v, f = box_mesh(size, -0.5 * np.asarray(size, dtype=np.float64))
    if rotation is not None:
        v = v @ rotation.T
    return v + np.asarray(center, dtype=np.float64), f


def _hinge(parent, child, anchor, axis, limits=None):
    return Joint(parent, child, "hinge", np.asarray(anchor, float), np.asarray(axis, float) / np.linalg.norm(axis), limits)


def laptop(rng):
    """Base and lid hinged along the back edge; the lid opens between 60 and 130 degrees."""
    w, d = rng.uniform(0.28, 0.4), rng.uniform(0.2, 0.28)
    t_base, t_lid = rng.uniform(0.012, 0.025), rng.uniform(0.006, 0.012)
    opening = np.radians(rng.uniform(60, 130))
    hinge = np.array([0.0, d / 2, t_base])
    lid_rotation = _rotation([-1, 0, 0], opening)  # about -x: positive angles open the lid
    lid_center = hinge + lid_rotation @ np.array([0.0, -d / 2, t_lid / 2])
    parts = [_part((w, d, t_base), (0, 0, t_base / 2)), _part((w, d, t_lid), lid_center, lid_rotation)]
    return ArticulatedObject("laptop", parts, [_hinge(0, 1, hinge, [-1, 0, 0], (-opening + 0.05, np.radians(175) - opening))])


def door(rng):
    """A door leaf on a frame post, hinged about the vertical edge."""
    h, w, t = rng.uniform(0.6, 1.2), rng.uniform(0.3, 0.6), rng.uniform(0.02, 0.05)
    post = rng.uniform(0.04, 0.08)
    base = _part((post * 3, post * 3, 0.02), (0, 0, 0.01))
    frame = _part((post, post, h), (0, 0, 0.02 + h / 2))
    leaf = _part((w, t, h * 0.95), (post / 2 + w / 2, 0, 0.02 + h / 2))
    hinge_axis_point = np.array([post / 2, t / 2, 0.02 + h / 2])  # the leaf's back vertical edge
    joints = [Joint(0, 1, "fixed", np.array([0.0, 0.0, 0.02]), np.array([0.0, 0.0, 1.0])),
              _hinge(1, 2, hinge_axis_point, [0, 0, 1], (-np.radians(100), np.radians(100)))]
    return ArticulatedObject("door", [base, frame, leaf], joints)


def scissors(rng):
    """Two blades crossing at a pivot, hinged about the normal of their plane."""
    length, width, t = rng.uniform(0.12, 0.25), rng.uniform(0.012, 0.025), rng.uniform(0.003, 0.006)
    angle = np.radians(rng.uniform(10, 40))
    parts = []
    for sign, z in ((1, t / 2), (-1, 1.5 * t)):
        r = _rotation([0, 0, 1], sign * angle / 2)
        parts.append(_part((length, width, t), (0, 0, z), r))
    # blade 1 sits at -angle/2, blade 0 at +angle/2: turning blade 1 by +angle closes the scissors
    return ArticulatedObject("scissors", parts, [_hinge(0, 1, [0, 0, t], [0, 0, 1], (-np.radians(60), angle))])


def eyeglasses(rng):
    """A front with two temples hinged behind its ends (the temples do not touch the front at rest)."""
    w, h, t = rng.uniform(0.12, 0.15), rng.uniform(0.035, 0.05), rng.uniform(0.004, 0.008)
    temple = rng.uniform(0.12, 0.15)
    fold = np.radians(rng.uniform(0, 80))
    front = _part((w, t, h), (0, 0, h / 2))
    parts, joints = [front], []
    for i, side in enumerate((-1, 1)):
        # the hinge sits on a lug one temple-width behind the front, so a temple folds in without entering it
        anchor = np.array([side * w / 2, t / 2 + t, h * 0.75])
        r = _rotation([0, 0, 1], side * fold)
        center = anchor + r @ np.array([-side * t / 2, temple / 2, 0.0])
        parts.append(_part((t, temple, t * 1.5), center, r))
        # folding turns a temple inwards, by +side about z; it folds from straight (0) to 95 degrees
        inward = (-fold, np.radians(95) - fold)
        joints.append(_hinge(0, i + 1, anchor, [0, 0, 1], inward if side == 1 else (-inward[1], -inward[0])))
    return ArticulatedObject("eyeglasses", parts, joints)


def chain(rng):
    """A folding rule: links end to end, hinged on the top and bottom edges in turn, so it zigzags."""
    n = int(rng.integers(3, 8))
    length, width = rng.uniform(0.05, 0.15), rng.uniform(0.01, 0.03)
    parts, joints = [], []
    for i in range(n):
        parts.append(_part((length, width, width), (i * length, 0, width / 2)))
        if i:
            edge_height = width if i % 2 else 0.0
            joints.append(_hinge(i - 1, i, [(i - 0.5) * length, 0, edge_height], [0, 1, 0],
                                 (-np.radians(180), np.radians(180))))
    return ArticulatedObject("chain", parts, joints)


def figure(rng):
    """A figure with limbs standing upright: a head that nods, arms that swing out at the shoulders and
    bend at the elbows, legs that swing forward at the hips and bend back at the knees. Every hinge
    runs along an edge of its child's face on its parent."""
    height = rng.uniform(0.3, 1.0)
    bulk, limb = rng.uniform(0.85, 1.15), rng.uniform(0.75, 1.25)  # torso and limb thickness over the average
    tw, td, th = 0.30 * height * bulk, 0.16 * height * bulk, 0.32 * height
    head = 0.14 * height
    upper, lower = (0.08 * height * limb, 0.20 * height), (0.07 * height * limb, 0.18 * height)
    thigh, shin = (0.11 * height * limb, 0.24 * height), (0.09 * height * limb, 0.22 * height)
    hip = thigh[1] + shin[1]
    top = hip + th
    parts = [_part((tw, td, th), (0, 0, hip + th / 2)), _part((head, head, head), (0, 0, top + head / 2))]
    joints = [_hinge(0, 1, [0, head / 2, top], [1, 0, 0], (-np.radians(60), np.radians(60)))]
    for side in (-1, 1):
        x = side * (tw / 2 + upper[0] / 2)  # the arm hangs against the torso's side
        parts.append(_part((upper[0], upper[0], upper[1]), (x, 0, top - upper[1] / 2)))
        joints.append(_hinge(0, len(parts) - 1, [side * tw / 2, 0, top], [0, 1, 0], (-np.pi, np.pi)))
        elbow = top - upper[1]
        parts.append(_part((lower[0], lower[0], lower[1]), (x, 0, elbow - lower[1] / 2)))
        joints.append(_hinge(len(parts) - 2, len(parts) - 1, [x, lower[0] / 2, elbow], [1, 0, 0], (-np.pi, np.pi)))
    for side in (-1, 1):
        x = side * max(tw / 4, thigh[0] / 2 + 0.005 * height)  # the legs apart
        parts.append(_part((thigh[0], thigh[0], thigh[1]), (x, 0, hip - thigh[1] / 2)))
        joints.append(_hinge(0, len(parts) - 1, [x, thigh[0] / 2, hip], [1, 0, 0], (-np.pi, np.pi)))
        parts.append(_part((shin[0], shin[0], shin[1]), (x, 0, shin[1] / 2)))
        joints.append(_hinge(len(parts) - 2, len(parts) - 1, [x, -shin[0] / 2, shin[1]], [1, 0, 0], (-np.pi, np.pi)))
    return ArticulatedObject("figure", parts, joints)


def random_assembly(rng):
    """2 to 6 boxes, each hinged or slid onto a face of an earlier one at a random point and axis."""
    n = int(rng.integers(2, 7))
    parts, joints, sizes, centers = [], [], [], []
    for i in range(n):
        size = rng.uniform(0.04, 0.3, size=3)
        if i == 0:
            center = np.array([0.0, 0.0, size[2] / 2])
        else:
            parent = int(rng.integers(0, i))
            direction = np.zeros(3)
            direction[int(rng.integers(0, 3))] = rng.choice([-1.0, 1.0])
            anchor = centers[parent] + direction * sizes[parent] / 2 + rng.uniform(-0.4, 0.4, 3) * sizes[parent] * (direction == 0)
            center = anchor + direction * size / 2
            if rng.random() < 0.8:
                along, across = rng.permutation(np.nonzero(direction == 0)[0])
                axis = np.zeros(3)
                axis[along] = 1.0
                edge = anchor.copy()  # the hinge runs along an edge of the child's contact face
                edge[across] += rng.choice([-0.5, 0.5]) * size[across]
                joints.append(_hinge(parent, i, edge, axis, (-np.radians(rng.uniform(20, 150)), np.radians(rng.uniform(20, 150)))))
            else:
                joints.append(Joint(parent, i, "slide", anchor, np.abs(direction), (-0.3 * size.max(), 0.3 * size.max())))
        parts.append(_part(size, center))
        sizes.append(size)
        centers.append(center)
    return ArticulatedObject("assembly", parts, joints)


def swept_limits(obj: ArticulatedObject, tolerance: float | None = None) -> ArticulatedObject:
    """The object with every hinge's range cut to where its parts do not overlap."""
    points = [surface_samples(v, f, SWEEP_SAMPLES) for v, f in obj.parts]
    tolerance = tolerance or 1e-3 * float(np.linalg.norm(np.ptp(obj.mesh()[0], axis=0)))
    joints = []
    for j in obj.joints:
        if j.kind == "hinge":
            free = free_range(obj.parts[j.parent], points[j.parent], obj.parts[j.child], points[j.child],
                              j.anchor, j.axis, tolerance)
            lo, hi = j.limits if j.limits is not None else (-np.pi, np.pi)
            j = Joint(j.parent, j.child, j.kind, j.anchor, j.axis, (max(lo, free[0]), min(hi, free[1])))
        joints.append(j)
    return ArticulatedObject(obj.name, obj.parts, joints)


def free_range(parent, parent_points, child, child_points, anchor, axis, tolerance):
    """How far the child turns each way about the hinge before the parts overlap (at most 180 degrees).

    The child turns in 1-degree steps until a sample point of either part is inside the other by more
    than the tolerance (points on the other's surface give unreliable winding numbers: faces that
    touch, like stacked scissor blades, may slide over each other).
    """
    # points on the hinge line always touch the other part: they cannot tell
    parent_points = parent_points[_line_distance(parent_points, anchor, axis) > 2 * tolerance]
    child_points = child_points[_line_distance(child_points, anchor, axis) > 2 * tolerance]
    limits = []
    for sign in (-1.0, 1.0):
        angle = 0.0
        while angle < np.pi:
            turn = _rotation(axis, sign * (angle + SWEEP_STEP))
            turned_child = ((child[0] - anchor) @ turn.T + anchor, child[1])
            if (_inside(((child_points - anchor) @ turn.T + anchor), parent, tolerance)
                    or _inside(parent_points, turned_child, tolerance)):
                break
            angle += SWEEP_STEP
        limits.append(sign * angle)
    return limits[0], limits[1]


def _inside(points, mesh, tolerance) -> bool:
    inside = points[winding_number(points, *mesh) > INSIDE]
    return bool(len(inside)) and bool((surface_distance(inside, *mesh) > tolerance).any())


def _line_distance(points, anchor, axis):
    offset = points - anchor
    return np.linalg.norm(offset - np.outer(offset @ axis, axis), axis=1)


def _swept(builder):
    def build(rng):
        return swept_limits(builder(rng))

    build.__name__, build.__doc__ = builder.__name__, builder.__doc__
    return build


BUILDERS = {name: _swept(b) for name, b in {"laptop": laptop, "door": door, "scissors": scissors,
                                           "eyeglasses": eyeglasses, "chain": chain, "figure": figure,
                                           "assembly": random_assembly}.items()}
