"""The Euler-Lagrange equations of any kinematic map (docs/physics.md).

With x(q) the mass points, J = dx/dq and v = J q_dot:

    M(q) q_ddot = J^T (f - m * d2x[q_dot, q_dot]) - grad V(q) - D q_dot,    M = J^T diag(m) J

d2x[q_dot, q_dot] = (d/dt J) q_dot carries the Coriolis and centrifugal terms. The map gives the sums
over its mass points (``KinematicMap.mass_terms``: from nested forward-mode products, never an explicit
Hessian, or a closed form) and the Jacobian of the points forces act on.
"""

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from scipy.linalg.lapack import dpotrf, dpotrs
from scipy.spatial import ConvexHull, QhullError

from .contact import ContactPlanes, damping_ratios, plane_forces, within_a_step
from .kinematics import MASS, KinematicMap, MassTerms
from .mesh import SUPPORT_SMOOTHING, fibonacci_sphere, is_closed
from .obstacles import FAR, SLACK, Obstacles, Planes, along_frames, nearest_on_triangles
from .rotation import body_angular_velocity, hat, right_jacobian

ACTING = "acting"  # the map's point set of the contact points, the pins, then the load points
SURFACE = "surface"  # the bodies' mesh vertices, which other bodies meet (a scene of several bodies)
SURFACE_FIELD_LIMIT = 4096  # vertices: a surface with more is skinned each step (its field would be 25 MB)
MASS_REGULARIZATION = 1e-10  # relative to the mean diagonal of M, keeps Cholesky defined
# The largest damping ratio of an implicit step's contact dashpots: at 3 the contact keeps 0.024 of the
# normal speed and lets go of a point within 20 ms (its slow rate omega (zeta - sqrt(zeta^2 - 1)), 53 /s
# at k = 1e5 s^-2); a stiffer dashpot, as restitution 0 asks (zeta 50), only holds the point inside
# the surface longer (a box landing at 5 m/s sank 2 cm and crept out over half a second). The
# explicit methods' caps (contact.plane_forces) hold it lower still.
OVERDAMPED = 3.0
# m/s: a contact point moving along its surface's normal this fast is in an impact, which the contact's
# steps resolve (trajectory.Run) and whose rigid body's speed away is capped at every step (restitute);
# a slower bounce rises at most IMPACT_SPEED^2 / 2 g = 2 mm
IMPACT_SPEED = 0.2
# m: a contact point this close to the surface it left, while its body's centre of mass still comes
# towards it (or towards the other body's), keeps the body in its impact (restitute, _restitute_bodies):
# a soft jelly's squashed face springs back up to about a millimetre off the ground while the body still sinks
RETOUCH = 5e-3
# A body's impact that begins with its centre of mass over the hull of its touching points, on
# one surface (their normals within acos(FLAT_NORMALS) = 10 degrees), inside it by FLAT_MARGIN of the
# hull's size, bounces without tipping (hold_landings); on another body, one it lands on from above,
# their normal within acos(FLAT_UP) = 45 degrees of up
FLAT_NORMALS = math.cos(math.radians(10.0))
FLAT_MARGIN = 0.02
FLAT_UP = math.cos(math.radians(45.0))
CREASE_SLOTS = 32  # contact points a body places each step where colliders' creases meet its faces
SLOT_SLACK = 0.25  # of a learned body's size: how far its deformation may move its surface out of its rest box
BOX_CORNERS = np.array(list(itertools.product((0, 1), repeat=3)))  # a box's 8 corners, low (0) or high (1) per axis
HOLD_RATE = 1e3  # a held landing's damper stops its turning within a step to a part in this (_holding)
# m: the ground under a body moves (_lift_ground) only when the support it meets has moved this far: a
# body rocking at rest would otherwise take the work of a change too small to matter at every step
LIFT_STEP = 1e-6
# A round rigid body's support point (Environment.support_contact) rests with this share of its mass:
# on it alone a ball sinks g / (SUPPORT_SHARE k) (0.4 mm on the stiff floor), and its spring rings at
# sqrt(k) at most wherever the point moves along the normal with a quarter of the mass or more
SUPPORT_SHARE = 0.25
# A round rigid body's rolling resistance: lever a of this share of its size (c_rr = a / r = 1 % for
# a ball), regularized at SUPPORT_ROLLING_SLIP at the lever's end, so that it holds a ball still, as
# Coulomb friction holds, where a ball rolling free of the polygon of its samples kept any nudge its
# landing gave it and wandered off
SUPPORT_ROLLING = 3e-3
SUPPORT_ROLLING_SLIP = 1e-5  # m/s
RESOLVED_PHASE = math.pi  # omega h of the contact's spring up to which a step resolves it (trapezoidal)
NEWTON_ITERATIONS = 8  # of an implicit step's contact at most
# relative size of the last correction of the velocity change at which they stop: Newton's method
# converges quadratically, so what is left after it is of the order of its square
NEWTON_TOLERANCE = 1e-5
# the same while friction acts, whose reweighting converges linearly, not quadratically: the law's
# weights then hold to about this share
FRICTION_TOLERANCE = 1e-3


@dataclass
class Environment:
    """What acts on the bodies, batched: tensors with a leading B where per body.

    Point loads act at material points (embedded through the map), so they follow the body and their
    generalized force is exactly J^T f. A load is on while its window [t0, t1) holds the step.
    """

    gravity: torch.Tensor  # (3,) m/s^2
    ground_height: torch.Tensor | None = None  # (B,) m, None for no ground
    friction: torch.Tensor | float = 0.5  # Coulomb coefficient mu
    restitution: torch.Tensor | float = 0.3  # of the contact's spring-dashpot: the normal speed a point keeps, 0..1
    impact_restitution: torch.Tensor | float | None = None  # Newton's law for the centre of mass (restitute)
    contact_stiffness: torch.Tensor | float = 1e5  # s^-2: per unit mass, spread over the contact points
    # the share of the contact mass one flat side holds, relative to its vertices' (simulation.
    # touching_points; 1: its vertices alone): the springs are stiffened by its inverse, so that a
    # flat side of a body sampled along its edges presses as its vertices did, at sqrt(k) at most
    flat_share: torch.Tensor | float = 1.0
    friction_regularization: float = 0.001  # m/s: below this slip friction ramps to zero (a push under mu N creeps)
    rolling_lever: torch.Tensor | float = 0.0  # m: arm of the ground's rolling resistance N a (rolling_resistance)
    rolling_regularization: torch.Tensor | float = 0.001  # m/s at the lever's end: below it the torque ramps to 0
    drag: torch.Tensor | float = 0.0  # 1/s: linear air drag per unit mass
    damping: torch.Tensor | float = 0.0  # 1/s: mass-proportional Rayleigh rate, deformation only
    contact_points: torch.Tensor | None = None  # (B, C, 3) rest positions
    support_points: torch.Tensor | None = None  # (B, K, 3) rest vertices of the surface's hull (_ground_lift)
    support_weights: torch.Tensor | None = None  # (B, K) their shares of the directions (mesh.convex_hull), 0 = padding
    support_contact: torch.Tensor | None = None  # (B,) bool: contact point 0 is the support point (_place_support)
    contact_mass: torch.Tensor | None = None  # (B, C) mass share of each contact point, 0 = padding
    obstacles: Obstacles | None = None  # colliders the contact points meet besides the ground
    surface_points: torch.Tensor | None = None  # (B, V, 3) rest mesh vertices the other bodies meet (obstacles.bodies)
    surface_faces: list | None = None  # each body's triangles (T_b, 3) over its surface_points (_place_on_creases)
    pin_points: torch.Tensor | None = None  # (B, N, 3) rest positions, each held at its place at t = 0
    pin_mass: torch.Tensor | None = None  # (B, N) mass share each pin holds, 0 = padding
    pin_stiffness: float = 1e5  # s^-2: per unit mass, like the ground's; a pin gives g / k under its share's weight
    pin_path: torch.Tensor | None = None  # (B, K, N, 3) where the pins are held at frames 0..K-1 (m), else at pin_points
    pin_fps: float = 24.0  # frames per second of pin_path
    load_points: torch.Tensor | None = None  # (B, L, 3) rest positions
    load_vectors: torch.Tensor | None = None  # (B, L, 3) N
    load_windows: torch.Tensor | None = None  # (B, L, 2) s


@dataclass
class State:
    """The map at (q, q_dot): the sums over its mass points, and the points forces act on."""

    x: torch.Tensor  # (B, A, 3) the acting points: contact, pins, then load
    v: torch.Tensor  # (B, A, 3)
    jacobian: torch.Tensor  # (B, A, 3, n)
    mass: MassTerms

    @property
    def mass_matrix(self) -> torch.Tensor:
        return self.mass.mass_matrix


class LagrangianSystem:
    """Mass matrix, generalized forces and energies for a kinematic map in an environment."""

    def __init__(self, kinematic_map: KinematicMap, env: Environment):
        self.map = kinematic_map
        self.env = env
        dtype = kinematic_map.dtype
        b = kinematic_map.batch
        empty = torch.zeros(b, 0, 3, dtype=dtype)
        self.contact_points = env.contact_points if env.contact_points is not None else empty
        self.contact_mass = env.contact_mass if env.contact_mass is not None else torch.zeros(b, 0, dtype=dtype)
        # a body's contact points where the colliders' creases meet its faces, placed each step
        # (_place_on_creases) after its own: a copy of its first point and weightless while unused
        sizes = getattr(kinematic_map, "sizes", None) or [kinematic_map.n_dof] * b
        creased = bool(env.obstacles is not None and len(env.obstacles.faces) and env.surface_faces is not None
                       and self.contact_points.shape[1])
        self.n_slots = CREASE_SLOTS if creased else 0
        self._slots = None  # (their arms R^T (x - p) (B, S, 3), which are used (B, S)) this step
        if self.n_slots:
            self._slot_share = self.contact_mass.amax(1)  # (B,) a contact point's
            # each body's faces, the rows of its vertices they use (a scene pads them), its longest edge
            # and whether it is closed
            self._surfaces_of = [(faces, np.unique(faces), float(np.linalg.norm(
                points[faces] - points[np.roll(faces, 1, 1)], axis=-1).max()), is_closed(faces))
                for faces, points in zip(env.surface_faces, env.surface_points.numpy())]
            # a learned body's surface is drawn for the slots only where crease points come near its
            # box: the surface's in its own frame at rest (B, 2, 3), grown by SLOT_SLACK of its size for
            # the deformation (a rigid body's, cheap to draw, and a scene's, drawn for the bodies, are
            # drawn every step)
            self._surface_box = None
            if any(n > 6 for n in sizes):
                rest = self.map.rest_coordinates()
                arms = (env.surface_points - rest[:, None, :3]) @ self.map.pose(rest)["rotation"]  # R^T (x - p)
                used = [torch.from_numpy(rows) for _, rows, _, _ in self._surfaces_of]
                low = torch.stack([a[r].amin(0) for a, r in zip(arms, used)])
                high = torch.stack([a[r].amax(0) for a, r in zip(arms, used)])
                slack = SLOT_SLACK * (high - low).norm(dim=-1, keepdim=True)
                self._surface_box = torch.stack([low - slack, high + slack], 1)
            self.contact_points = torch.cat([self.contact_points, self.contact_points[:, :1].expand(-1, self.n_slots, -1)], 1)
            self.contact_mass = torch.cat([self.contact_mass, torch.zeros(b, self.n_slots, dtype=dtype)], 1)
        self.n_contact = self.contact_points.shape[1]
        self.pin_points = env.pin_points if env.pin_points is not None else empty
        self.pin_mass = env.pin_mass if env.pin_mass is not None else torch.zeros(b, 0, dtype=dtype)
        self.n_pin = self.pin_points.shape[1]
        self.clock = 0.0  # s: the time of the state forces are asked about (the integrators set it)
        self.load_points = None
        self.set_loads(env.load_points if env.load_points is not None else empty,
                       env.load_vectors if env.load_vectors is not None else empty,
                       env.load_windows if env.load_windows is not None else torch.zeros(b, 0, 2, dtype=dtype))
        self.masses = kinematic_map.masses
        self.gravity = torch.as_tensor(env.gravity, dtype=dtype)
        self.per_body = {k: _per_body(getattr(env, k), b, dtype) for k in
                         ("friction", "restitution", "drag", "damping", "rolling_lever", "rolling_regularization",
                          "contact_stiffness", "flat_share")}
        # s^-2 (B,): k, a flat side's springs together, which ring at sqrt(k) (the steps' bound); each
        # contact point's spring is stiffened by 1 / flat_share (Environment.flat_share)
        self.flat_stiffness = self.per_body["contact_stiffness"]
        self.per_body["contact_stiffness"] = self.flat_stiffness / self.per_body["flat_share"]
        self.step = None  # length of the current step, set by set_interval (caps contact damping)
        self.touched = False  # whether a contact force acted since the caller last cleared it (trajectory.Run)
        self.pair_forces = None  # set by forces
        self.pressed = None  # (B, P) the contact pairs whose spring pushed within the last implicit step
        self._factored = None  # (M, its factor): see factor
        self._posed = None  # (q, the bodies' rotations): see _rotations
        self._state = None  # (q, q_dot, State) of the last state
        self._acted = None  # (q, the acting points' x and J) of the last ``_acting``
        self.contact_damping = damping_ratios(self.per_body["restitution"])
        self.obstacles = env.obstacles if self.n_contact else None
        self._collider_planes = None  # obstacles.Planes of the current step (set_interval)
        self._surfaces = None  # (t, the bodies' vertex positions (B, V, 3)) at the last step's start
        self._carried = None  # (normal, offset) in their owners' frames of the planes on other bodies (_planes_at)
        self._owner_shape = None  # (the learned columns of J where each pair meets its owner, q) at the step's start
        self._started = 0.0  # s: when the step of the current collider planes began
        if self.obstacles is not None and (self.obstacles.bodies is not None or self.n_slots):
            # other bodies meet these every step: a learned map gives them its quadratic field, as it
            # gives the contact points, unless there are too many for its (V, 3, k, k) table
            kinematic_map.attach(SURFACE, env.surface_points, output=env.surface_points.shape[1] > SURFACE_FIELD_LIMIT)
        self._support = self._support_offsets(env)  # the surface's hull and the contact samples, body frame
        self.support_contact = None  # (B,) bool: contact point 0 is the lowest point of the body (_place_support)
        if self._support is not None and env.support_contact is not None and bool(env.support_contact.any()):
            self.support_contact = env.support_contact
            hull = self._support[0]
            self._smoothing = SUPPORT_SMOOTHING * (hull.amax(1) - hull.amin(1)).norm(dim=-1)  # tau (B,)
            self._log_shares = torch.log(env.support_weights.to(dtype))  # -inf: padding
            self._rounding = self._support_rounding()
            # the normal (B, 3) of the surface each support point meets: the ground's until it presses another
            self._support_normal = torch.tensor([0.0, 0.0, 1.0], dtype=dtype).expand(b, 3).clone()
        self._ground = self._ground_planes()  # the ground's planes, raised by _ground_lift each step
        self.planes = self._ground  # contact.ContactPlanes the contact points meet this step
        self.elastic = (~kinematic_map.rigid_dofs).to(dtype)
        self.deforms = bool(self.elastic.any())
        rest_chol = None  # the Cholesky factor of M at rest, where the deformation needs it
        if self.deforms and (self.touchable or self.n_pin):
            # a contact point or pin the deformation moves with little inertia gets a spring of its own
            # mass at most, so its frequency stays sqrt(k) as for a rigid body (contact.plane_forces);
            # the pins, which all pull at once, then share one scale that keeps their springs' joint
            # frequency, sqrt(lambda_max(M^-1 K)) with K = k sum m_p J_p^T J_p, at sqrt(k) too: several
            # pins on a soft direction add up (docs/physics.md, "Pins")
            rest = self.map.rest_coordinates()
            jacobian = self.map.jacobian(rest, ACTING)[1][:, :self.n_contact + self.n_pin]
            rest_chol, _ = self.factor(self.mass_matrix(rest))
            mobile = self._mobile_mass(self._whiten(rest_chol, jacobian))
            self.contact_mass = torch.minimum(self.contact_mass, mobile[:, :self.n_contact])
            self.pin_mass = torch.minimum(self.pin_mass, mobile[:, self.n_contact:])
            if self.n_pin:
                held = _pin_stiffness(1.0, self.pin_mass, jacobian[:, self.n_contact:])  # per unit k
                self.pin_mass = self.pin_mass / _top_eigenvalues(rest_chol, held).clamp(min=1.0)[:, None]
        self.rest_stiffness = self._rest_stiffness()
        self.impact = None  # e per body of Newton's law over each impact (restitute), for a free body on a ground
        if env.impact_restitution is not None and self.touchable and bool(kinematic_map.rigid_dofs[:3].all()) \
                and not self.n_pin:
            self.impact = _per_body(env.impact_restitution, b, dtype)
        # (hold_landings) the period (B,) s of each body's slowest deformation at rest, what a squashed
        # face takes to spring back; 0 for a rigid one, and for one that keeps nothing of an impact (e = 0,
        # cloth: limp, it gives nothing back, and its slowest mode takes seconds)
        self.give_period = torch.zeros(b, dtype=dtype)
        if self.impact is not None and rest_chol is not None and self.rest_stiffness is not None:
            self.give_period = torch.where(self.impact > 0, _slowest_periods(rest_chol, self.rest_stiffness), 0.0)
        self._impact_normal = torch.zeros(b, 3, dtype=dtype)  # the surface's normal where each impact began
        # (hold_landings) whether each body is landing, whether it began flat over its support, that
        # support's normal and when (s) it last moved along it faster than IMPACT_SPEED (at first, when
        # the landing began)
        self._landed_flat = (torch.zeros(b, dtype=torch.bool), torch.zeros(b, dtype=torch.bool),
                             torch.zeros(b, 3, dtype=dtype), torch.zeros(b, dtype=dtype))
        self.contact_speed = 0.0  # m/s: the fastest a pushed pair moved along its normal, implicit steps since cleared
        # between bodies (restitute): each pair's incoming relative speed (B, B), NaN apart, and normal
        # (B, B, 3); and of its last impact, the incoming speed (B, B), NaN for none, and when it ended (s)
        self._meeting = (torch.full((b, b), torch.nan, dtype=dtype), torch.zeros(b, b, 3, dtype=dtype),
                         torch.full((b, b), torch.nan, dtype=dtype), torch.full((b, b), -torch.inf, dtype=dtype))

    def _ground_planes(self, lift=None):
        """The ground as one plane under every contact point, raised by ``lift`` (B,) m, or None without a
        ground."""
        if self.env.ground_height is None or not self.n_contact:
            return None
        b, c, dtype = self.contact_points.shape[0], self.n_contact, self.contact_points.dtype
        height = self.env.ground_height if lift is None else self.env.ground_height + lift
        return ContactPlanes(torch.tensor([0.0, 0.0, 1.0], dtype=dtype).expand(b, c, 3),
                             height[:, None].expand(b, c), torch.zeros(b, c, 3, dtype=dtype),
                             self.per_body["friction"][:, None].expand(b, c), torch.full((b, c), -1), 1)

    def _support_offsets(self, env):
        """The surface's hull points and the contact samples at rest as body-frame offsets R^T (x - p),
        (B, K, 3) and (B, C, 3); None without support points, contact points or a body frame."""
        if env.support_points is None or not self.n_contact:
            return None
        rest = self.map.rest_coordinates()
        rotation = self.map.pose(rest).get("rotation")
        if rotation is None:
            return None
        origin = rest[:, None, :3]
        return tuple((points.to(rest.dtype) - origin) @ rotation
                     for points in (env.support_points, self.contact_points))

    def _ground_lift(self, q):
        """How far (B,) m the ground rises under each body to meet its surface rather than the hull of
        its contact samples: h_S(d) - h_P(d) with d = R^T (0, 0, -1) the way down in the body frame, h_S
        the support max_k d . r_k of the surface's hull points and h_P that of the samples, both at
        rest (the gap is the samples' hull's own; a deformation moves the two alike). A ball of 128
        samples would otherwise rest on the facet of three of them, up to 2-3 % of its diameter sunk
        into the ground. A body with a support point (``_place_support``) meets the ground there: 0."""
        if self._support is None:
            return torch.zeros(q.shape[0], dtype=q.dtype)
        down = -self._rotations(q)[:, 2, :, None]  # (B, 3, 1): R^T e_z is R's third row
        surface, samples = self._support
        lift = ((surface @ down).amax((1, 2)) - (samples @ down).amax((1, 2))).clamp(min=0.0)
        return lift if self.support_contact is None else torch.where(self.support_contact, 0.0, lift)

    def _lift_ground(self, q):
        """Raise the ground by ``_ground_lift`` at q for the step; returns the change (B,) J of its springs'
        energy 1/2 sum k w_i (h + lift - z_i)+^2 at q that this makes (the ground's slot of
        ``_contact_energy``, whose other slots it leaves alone), booked as work (as a moving collider's)."""
        lift, was = self._ground_lift(q), self._ground.offset[:, 0] - self.env.ground_height
        if bool(((lift - was).abs() < LIFT_STEP).all()):
            return torch.zeros_like(lift)
        z = self._acting(q)[0][:, :self.n_contact, 2]
        spring = 0.5 * self.per_body["contact_stiffness"][:, None] * self.contact_mass
        height = self.env.ground_height[:, None]
        energy = lambda raised: (spring * (height + raised[:, None] - z).clamp(min=0.0) ** 2).sum(-1)
        self._ground = self._ground_planes(lift)
        self.planes = self._combined_planes()
        return energy(lift) - energy(was)

    def _collider_contact(self, planes: Planes) -> ContactPlanes:
        """obstacles.Planes as contact planes, each pair's friction sqrt(mu_body mu_collider)."""
        dtype = self.contact_points.dtype
        t = lambda a: torch.as_tensor(a, dtype=dtype)
        friction = torch.sqrt(self.per_body["friction"][:, None] * t(planes.friction))
        return ContactPlanes(t(planes.normal), t(planes.offset), t(planes.velocity), friction,
                             torch.as_tensor(planes.owner), 1)

    def snapshot(self):
        """What a step changes besides (q, q_dot): the map's state, the ground's and the colliders' planes
        and where the bodies' surfaces were (``restore``)."""
        return self.map.snapshot(), None if self._collider_planes is None else self._collider_planes.copy(), \
            self._ground, self._surfaces, self._carried, self._owner_shape, self._started, self._impact_normal, \
            self._landed_flat, self._meeting, self._support_normal if self.support_contact is not None else None, \
            self._slots, self.contact_mass

    def restore(self, snapshot) -> None:
        state, planes, self._ground, self._surfaces, self._carried, self._owner_shape, self._started, \
            self._impact_normal, self._landed_flat, self._meeting, normal, self._slots, self.contact_mass = snapshot
        if normal is not None:
            self._support_normal = normal
        self.map.restore(state)
        # the rotations and points of the same q differ with the map's restored orientation
        self._posed = self._state = self._acted = None
        if self.obstacles is not None:
            self._collider_planes = planes
        self.planes = self._combined_planes()

    def _combined_planes(self):
        ground = self._ground
        if self._collider_planes is None:
            return ground
        colliders = self._collider_contact(self._collider_planes)
        planes = colliders if ground is None else ContactPlanes.concatenate([ground, colliders])
        if self.n_slots:  # an unused crease slot (_place_on_creases) meets nothing
            unused = torch.zeros_like(self.contact_mass, dtype=torch.bool)
            unused[:, -self.n_slots:] = self.contact_mass[:, -self.n_slots:] == 0
            planes = dataclasses.replace(planes, offset=torch.where(unused.repeat(1, planes.slots), FAR, planes.offset))
        return planes

    def set_loads(self, points, vectors, windows) -> None:
        """The point loads: rest positions (B, L, 3), vectors (B, L, 3) N and windows [t0, t1) (B, L, 2) s.
        The acting points (contact, pins, then load) are attached to the map anew when the points change."""
        if self.load_points is None or not torch.equal(points, self.load_points):
            acting = torch.cat([self.contact_points, self.pin_points, points], 1)
            self.acting = bool(acting.shape[1])
            if self.acting:
                self.map.attach(ACTING, acting)
            self._state = self._acted = None
        self.load_points, self.load_vectors, self.load_windows = points, vectors, windows
        self.active_loads = torch.zeros_like(vectors)

    # -- kinematics ---------------------------------------------------------------------------
    def state(self, q, q_dot) -> State:
        """The map's mass terms, and x, v = J q_dot and J at the acting points. The last one is kept:
        a frame's energies and its next step start from the same (q, q_dot)."""
        if self._state is not None and self._state[0] is q and self._state[1] is q_dot:
            return self._state[2]
        if self.acting:
            x, jac = self._acting(q)
        else:
            x, jac = torch.zeros(q.shape[0], 0, 3, dtype=q.dtype), torch.zeros(q.shape[0], 0, 3, q.shape[1], dtype=q.dtype)
        state = State(x, (jac @ q_dot[:, None, :, None])[..., 0], jac, self.map.mass_terms(q, q_dot))
        self._state = (q, q_dot, state)
        return state

    @staticmethod
    def _whiten(chol, contact_jacobian):
        """L^-1 J_i^T for every contact point and axis, (B, n, C, 3) with M = L L^T: both the points'
        effective masses and the dampers' fastest rate are sums over these."""
        b, c, _, n = contact_jacobian.shape
        rows = contact_jacobian.reshape(b, c * 3, n).transpose(1, 2)
        return torch.linalg.solve_triangular(chol, rows, upper=False).reshape(b, n, c, 3)

    @staticmethod
    def _mobile_mass(whitened):
        """A lower bound of each contact point's effective mass over all directions, 1 / tr(J M^-1 J^T) <=
        1 / lambda_max, (B, C): the deformation may move a point with little inertia, sideways too."""
        return 1.0 / (whitened * whitened).sum((1, 3)).clamp(min=1e-300)

    @staticmethod
    def _fastest_rate(projected, coefficients):
        """Largest eigenvalue of M^-1 D, D = sum_p c_p J_p^T B_p B_p^T J_p over the contact pairs, from
        L^-1 J_p^T B_p (B, n, P, k) (``_whiten`` along each pair's directions B_p), as that of the
        symmetric L^-1 D L^-T, per body."""
        b, n, _, k = projected.shape
        rows = projected.reshape(b, n, -1)
        weights = coefficients[..., None].expand(-1, -1, k).reshape(b, 1, -1)
        damping = (rows * weights) @ rows.transpose(1, 2)
        finite = torch.isfinite(damping).all(-1).all(-1)  # a diverged state: NaN, for the rollout to catch
        rate = torch.linalg.eigvalsh(torch.where(finite[:, None, None], damping, 0.0))[:, -1]
        return torch.where(finite, rate, torch.nan)

    def factor(self, mass_matrix):
        """Cholesky factor of M with a small relative regularizer, and cholesky_ex's info (0 = it worked).
        The last one is kept: contact forces and the solve of one evaluation factor the same M."""
        if self._factored is not None and self._factored[0] is mass_matrix:
            return self._factored[1]
        scale = mass_matrix.diagonal(dim1=-2, dim2=-1).mean(-1)
        eye = torch.eye(mass_matrix.shape[-1], dtype=mass_matrix.dtype)
        factored = torch.linalg.cholesky_ex(mass_matrix + MASS_REGULARIZATION * scale[:, None, None] * eye)
        self._factored = (mass_matrix, factored)  # holding M keeps its identity unique
        return factored

    def mass_matrix(self, q):
        return self.map.mass_terms(q, torch.zeros_like(q)).mass_matrix

    def solve(self, mass_matrix, rhs):
        """M^-1 rhs by Cholesky with a small relative regularizer; NaN where M is not positive definite
        (a diverged state), which the rollout reports with its frame."""
        chol, info = self.factor(mass_matrix)
        solution = torch.cholesky_solve(rhs[..., None], chol)[..., 0]
        return torch.where((info == 0)[:, None], solution, torch.nan)

    # -- forces -------------------------------------------------------------------------------
    def set_interval(self, t0: float, t1: float, q=None, q_dot=None, fresh: bool = False):
        """Enter the step [t0, t1] from (q, q_dot): loads switch by its midpoint, so windows on frame
        bounds are exact, and the contact points take their colliders' planes for the step
        (obstacles.py; ``fresh``: as at a start, with no point past a surface). Returns the change (B,)
        J of the contact springs' energy at q that the new planes make: work done on the body (a
        collider moving into it), booked as such."""
        self.step = t1 - t0
        mid = 0.5 * (t0 + t1)
        on = (self.load_windows[..., 0] <= mid) & (mid < self.load_windows[..., 1])
        self.active_loads = self.load_vectors * on[..., None]
        jump = torch.zeros(self.contact_points.shape[0], dtype=self.contact_points.dtype)
        self.clock = t0
        if self._support is not None and self._ground is not None and q is not None:
            jump = self._lift_ground(q)
        if self.support_contact is not None and q is not None and not fresh:
            jump = jump + self._turn_support(q)
        if self.obstacles is None or q is None:
            return jump
        x, v = self._contact_motion(q, q_dot)
        before = self._contact_energy(q, x)
        previous = None if fresh or self._collider_planes is None else self._moved_planes(q, t0)
        surfaces = self._surface_motion(q, t0, fresh)
        if self.n_slots:
            self._place_on_creases(q, v, t0, t1 - t0, None if surfaces is None else surfaces[0])
            x, v = self._contact_motion(q, q_dot)
            if previous is not None:  # a slot's last plane was another place's
                previous.offset[:, -self.n_slots:] = FAR
        self._collider_planes = self.obstacles.planes(x.numpy(), v.numpy(), t0, t1 - t0, previous, surfaces)
        self._started = t0
        self.planes = self._combined_planes()
        self._carried = self._owner_shape = None
        if bool((self.planes.owner >= 0).any()):  # carried by their owners from here (_planes_at)
            rotation, origin = self._owner_frames(q)
            normal = (rotation.transpose(-1, -2) @ self.planes.normal[..., None])[..., 0]
            self._carried = (normal, self.planes.offset - (self.planes.normal * origin).sum(-1))
            if self.deforms:
                self._owner_shape = (self._shaping(q), q)
        return jump + self._contact_energy(q, x) - before

    def pin_pull(self, x, t: float):
        """The pins' springs' forces f = -k m (x - a) on the pinned points x (B, N, 3) at time t, and
        how fast their places a move (B, N, 3) each."""
        place, moving = self.pin_place(t)
        return -self.env.pin_stiffness * self.pin_mass[..., None] * (x - place), moving

    def pin_place(self, t: float):
        """Where the pins hold the body at time t (B, N, 3) and how fast that moves (B, N, 3): their
        rest places, or pin_path's, linear between its frames and the last held."""
        if self.env.pin_path is None:
            return self.pin_points, torch.zeros_like(self.pin_points)
        place, per_frame = along_frames(self.env.pin_path.movedim(1, 0), t * self.env.pin_fps)
        return place, per_frame * self.env.pin_fps

    def _reduced(self, planes):
        """Each pair's share of the two-body reduced mass, M_o / (M_o + M) against a body of mass M_o and
        1 against the ground or a collider (contact.plane_forces), or None without other bodies."""
        if self._carried is None:
            return None
        total = self.masses.sum(-1)
        owner = planes.owner.clamp(min=0)
        return torch.where(planes.owner >= 0, total[owner] / (total[owner] + total[:, None]), 1.0)

    def _shaping(self, q):
        """The learned columns of each pair's owner's Jacobian at the place the pair meets its surface
        (B, P, 3, n), zero elsewhere: sum_k w_k J_o(v_k) over the corners v_k of the face met, w_k the
        place's barycentric weights. Through them the owner's deformation moves the plane and feels
        the pair's push back (``_planes_at``, ``reactions``, ``_coupled``)."""
        planes = self._collider_planes
        owner = torch.as_tensor(planes.owner)
        corners = torch.as_tensor(planes.corners)
        met, held = owner >= 0, owner.clamp(min=0)[..., None]
        # J at the vertices met alone: each body's (B, I), the first I of its vertices once sorted met first
        needed = torch.zeros(q.shape[0], self.map.points(SURFACE).shape[1], dtype=torch.bool)
        needed[held.expand_as(corners)[met], corners[met]] = True
        index = torch.argsort((~needed).to(torch.int8), dim=1, stable=True)[:, :max(int(needed.sum(1).max()), 1)]
        place = torch.zeros_like(needed, dtype=torch.long).scatter_(1, index, torch.arange(index.shape[1]).expand_as(index))
        jacobian = self.map.jacobian(q, SURFACE, index)[1] * self.elastic  # (B, I, 3, n)
        weights = torch.as_tensor(planes.weights, dtype=q.dtype) * met[..., None]
        shaped = torch.einsum("bck,bckin->bcin", weights, jacobian[held, place[held, corners]])
        if self._ground is not None:  # the ground's slot comes first (_combined_planes)
            shaped = torch.cat([torch.zeros_like(shaped), shaped], 1)
        return shaped

    def _moved_planes(self, q, t: float) -> Planes:
        """The last step's collider planes moved on to time t: a collider's by its surface's velocity, a
        body's as that body moved (``_planes_at``)."""
        planes = self._collider_planes.copy()
        planes.offset += (t - self._started) * (planes.normal * planes.velocity).sum(-1)
        if self._carried is not None:
            c = self.n_contact
            carried = self._planes_at(q)
            met = planes.owner >= 0
            planes.normal[met] = carried.normal[:, -c:].numpy()[met]
            planes.offset[met] = carried.offset[:, -c:].numpy()[met]
        return planes

    def _acting(self, q):
        """x (B, P, 3) and J (B, P, 3, n) at the acting points at q. The last is kept: a step's impact
        law asks at the state it ended in, and the next step's colliders' planes and forces at the same."""
        if self._acted is None or self._acted[0] is not q:
            x, jacobian = self.map.jacobian(q, ACTING)
            if self.support_contact is not None:
                x, jacobian = self._place_support(q, x, jacobian)
            if self._slots is not None:
                arms, used = self._slots
                at, rows = self._material_points(q, arms)
                slots = slice(self.n_contact - self.n_slots, self.n_contact)
                x, jacobian = x.clone(), jacobian.clone()
                x[:, slots] = torch.where(used[..., None], at, x[:, slots])
                jacobian[:, slots] = torch.where(used[..., None, None], rows, jacobian[:, slots])
            self._acted = (q, (x, jacobian))
        return self._acted[1]

    def _support_logits(self, down):
        """d . r_k / tau + log s_k (B, D, K) of each body's hull vertices r_k (body frame) and their shares
        s_k of the directions (``mesh.convex_hull``) along the unit directions ``down`` (B, D, 3), tau =
        SUPPORT_SMOOTHING times the hull's size."""
        along = down @ self._support[0].transpose(1, 2) / self._smoothing[:, None, None]
        return along + self._log_shares[:, None]

    def _smooth_support(self, down):
        """The smooth support of each body's hull along the unit directions ``down`` (B, D, 3), body frame,
        h (B, D) and its gradient r_bar (B, D, 3):

            h(d) = tau log sum_k s_k exp(d . r_k / tau),   r_bar = sum_k w_k r_k,   w = softmax(``_support_logits``)

        On a ball the sum is the same along every direction, tau / 2 rho of radius rho, so h lies a
        constant below the hull; on an edge or a corner it lies further in (``_support_rounding``)."""
        logits = self._support_logits(down)
        return self._smoothing[:, None] * torch.logsumexp(logits, -1), torch.softmax(logits, -1) @ self._support[0]

    def _turn_support(self, q):
        """Turn each support point to the surface that carries its body at q: the normal of its deepest
        pair on the last step's planes (the ground, a collider, another body) among those that face up
        (n . up > 1/2, up against gravity: a slope of up to 60 degrees), so that on a plank it meets the
        plank where the ball touches it, not the point lowest along the ground's normal; kept while
        nothing carries it (a ball pressed against a wall or another ball sideways keeps the floor's,
        where turning to theirs and back put 0.1-0.2 J into two balls that met). Returns the change (B,)
        J of the springs' energy at q the point's move makes, booked as work, as the ground's lift is."""
        planes = self._planes_at(q)
        x = self._acting(q)[0][:, :self.n_contact]
        up = -self.gravity / self.gravity.norm().clamp(min=1e-300) if bool(self.gravity.any()) else \
            torch.tensor([0.0, 0.0, 1.0], dtype=q.dtype)
        depth = torch.where(planes.normal @ up > 0.5, planes.signed_depth(x), -torch.inf)  # (B, S C)
        deepest = depth.argmax(1)
        rows = torch.arange(q.shape[0])
        pressed = (depth[rows, deepest] > 0) & self.support_contact
        normal = torch.where(pressed[:, None], planes.normal[rows, deepest], self._support_normal)
        if bool(((normal - self._support_normal).abs() < 1e-12).all()):
            return torch.zeros(q.shape[0], dtype=q.dtype)
        before = self._contact_energy(q, x)
        self._support_normal = normal
        self._acted = self._state = None
        return self._contact_energy(q, self._acting(q)[0][:, :self.n_contact]) - before

    def _support_stiffness(self, q, s: State):
        """The geometric stiffness (B, n, n) of the spring on each support point, f H: as the body turns
        the point slides and its arm turns with it, which the contact's rows, taken where a step
        begins, leave out. f = k w d+ is the push of the surface it meets (``_turn_support``) at the
        state ``s`` and H the Hessian of the support's height h(d(theta)) in the rotation coordinates,
        T^T H_d T with

            H_d = [d]x^T (C / tau) [d]x + (d r_bar^T + r_bar d^T) / 2 - (r_bar . d) 1

        (C the covariance of the hull's points under the support's weights, ``_smooth_support``; zero
        for a ball, whose height no turn changes). The implicit step takes it with the potential's
        stiffness, so that the push's torque follows the point over the step (trapezoidal), where a
        rocking egg, its point swinging from end to end, gained 2 J in 5 s at the contact's steps."""
        b, n = q.shape
        surface, tau = self._support[0], self._smoothing[:, None, None]
        down = -(self._rotations(q).transpose(1, 2) @ self._support_normal[..., None])[..., 0]
        weights = torch.softmax(self._support_logits(down[:, None])[:, 0], -1)  # (B, K)
        mean = (weights[..., None] * surface).sum(1)
        spread = surface - mean[:, None]
        covariance = (weights[..., None, None] * spread[..., :, None] * spread[..., None, :]).sum(1)
        across = hat(down)
        hessian = across.transpose(1, 2) @ (covariance / tau) @ across \
            + 0.5 * (down[:, :, None] * mean[:, None, :] + mean[:, :, None] * down[:, None, :]) \
            - (mean * down).sum(-1)[:, None, None] * torch.eye(3, dtype=q.dtype)
        turn = right_jacobian(q[:, 3:6])
        planes = self._planes_at(q)
        along = (planes.normal.view(b, planes.slots, -1, 3)[:, :, 0] * self._support_normal[:, None]).sum(-1)
        depth = planes.signed_depth(s.x[:, :self.n_contact]).view(b, planes.slots, -1)[:, :, 0]  # point 0's
        depth = torch.where(along > 1 - 1e-9, depth, 0.0).amax(1).clamp(min=0.0) * self.support_contact
        push = self.per_body["contact_stiffness"] * self.contact_mass[:, 0] * depth  # f (B,)
        stiffness = torch.zeros(b, n, n, dtype=q.dtype)
        stiffness[:, 3:6, 3:6] = push[:, None, None] * turn.transpose(1, 2) @ hessian @ turn
        return stiffness

    def _support_rounding(self):
        """How far (B,) m the smooth support reaches past the hull where it reaches furthest (negative:
        falls short where it falls least short), over 512 well-spread directions: taken off it, so that
        it meets the hull where the hull curves least and lies within it elsewhere (within tau log 4 of
        it on a round body: ``mesh.round_hull``)."""
        down = torch.as_tensor(fibonacci_sphere(512), dtype=self._smoothing.dtype)
        down = down.expand(len(self._smoothing), -1, -1)
        height, _ = self._smooth_support(down)
        return (height - (down @ self._support[0].transpose(1, 2)).amax(-1)).amax(-1)

    def _place_support(self, q, x, jacobian):
        """The acting points' x (B, P, 3) and J (B, P, 3, n) with contact point 0 of each round rigid body
        (Environment.support_contact) moved to the lowest point of its smoothed hull at q: along the way
        into the surface that carries it, d = R^T (-n) (``_turn_support``; the ground's n = (0, 0, 1)
        until another does), at height h(d) - ``_support_rounding`` (``_smooth_support``), the point
        x = p + R r with r = r_bar + (h - d . r_bar) d, and J = [1 | -[R r]x R T] that of the material
        point there (T the right Jacobian of exp at theta): since d . dd = 0, its normal row is the
        gradient of that height, so the surface's spring on it is conservative while the point slides
        over the hull as the body turns. A ball otherwise rolls over its 128 contact samples like a
        polygon, landing on each next one and losing speed at every landing and to the friction of
        samples slipping off its bottom: set rolling at 2 m/s, it kept 0.28 m/s after 2 s."""
        rotation = self._rotations(q)
        down = -(rotation.transpose(1, 2) @ self._support_normal[..., None])[..., 0]  # R^T (-n)
        height, mean = self._smooth_support(down[:, None])
        height, mean = height[:, 0] - self._rounding, mean[:, 0]
        at, row = self._material_points(q, (mean + (height - (mean * down).sum(-1))[:, None] * down)[:, None])
        mine = self.support_contact
        x, jacobian = x.clone(), jacobian.clone()
        x[:, 0] = torch.where(mine[:, None], at[:, 0], x[:, 0])
        jacobian[:, 0] = torch.where(mine[:, None, None], row[:, 0], jacobian[:, 0])
        return x, jacobian

    def _material_points(self, q, arms):
        """The bodies' material points at body-frame arms r (B, K, 3) from their origins p, moved by
        their rigid motion alone: x = p + R r and J = [1 | -[R r]x R T | 0] (T the right Jacobian of exp
        at theta; a learned body's deformation left out, exact for a rigid one)."""
        rotation = self._rotations(q)
        turned = arms @ rotation.transpose(1, 2)  # R r
        rows = torch.zeros(*arms.shape, q.shape[1], dtype=q.dtype)
        rows[..., :3] = torch.eye(3, dtype=q.dtype)
        rows[..., 3:6] = -hat(turned) @ (rotation @ right_jacobian(q[:, 3:6]))[:, None]  # R (T e_k x r)
        return q[:, None, :3] + turned, rows

    def _place_on_creases(self, q, v, t: float, h: float, where=None) -> None:
        """Place each body's CREASE_SLOTS last contact points for the step [t, t + h] where the
        colliders' creases (``Obstacles.crease_points``) come near its faces: on its surface at q, the
        nearest point to each crease point within the crease's collider's thickness plus the reach of
        the step (as ``Obstacles.planes``), and outside a closed body: an edge already cut into it
        would meet a slot as deep as the cut, a spring pressed from nothing. They then meet the
        colliders as every contact point does, so a face over a collider's edge rests on that edge,
        not on its own points inside it alone. The crease points lie a sixteenth of the body's size
        apart, or twice that and so on where more would come near than there are slots: every one
        near takes a slot, so that no pressed spring is dropped for another from step to step
        (docs/physics.md, "Colliders"). Where the creases' own vertices alone are more (a finely cut
        collider), evenly every so many of them in order take one. A used slot has a contact point's
        mass share; the rest none. A slot moves with its body's rigid motion over the step
        (``_material_points``): on a learned body it is placed on the deformed surface and pushes the
        body as a whole, its deformation answering the contact points' pushes alone. ``where``: the
        bodies' surface vertices at q (B, V, 3), if known."""
        speed = v.norm(dim=-1).amax(1).numpy()
        rotation, centre = self._rotations(q).numpy(), q[:, :3].numpy()
        reach = 2 * h * (speed + self.obstacles.top_speed) + self.obstacles.reach_out
        creased = range(q.shape[0])
        if where is None and self._surface_box is not None:  # a learned body's surface, drawn only near creases
            corners = self._surface_box.numpy()[:, BOX_CORNERS, np.arange(3)]  # (B, 8, 3) in the body's frame
            boxed = corners @ rotation.transpose(0, 2, 1) + centre[:, None]  # p + R c
            around = np.stack([boxed.min(1) - reach[:, None], boxed.max(1) + reach[:, None]], 1)  # (B, 2, 3)
            creased = [body for body in creased if len(self.obstacles.crease_points(
                t + 0.5 * h, *around[body], float(np.linalg.norm(around[body, 1] - around[body, 0])) / 16)[0])]
        arms = np.zeros((q.shape[0], self.n_slots, 3))
        used = np.zeros((q.shape[0], self.n_slots), bool)
        if creased and where is None:
            where = self.map.embed(q, SURFACE).numpy()
        for body in creased:
            faces, rows, longest, closed = self._surfaces_of[body]
            vertices = where[body]
            low, high = vertices[rows].min(0) - reach[body], vertices[rows].max(0) + reach[body]
            size = float(np.linalg.norm(high - low))
            spacing = size / 16
            while True:
                c, thickness = self.obstacles.crease_points(t + 0.5 * h, low, high, spacing)
                if not len(c):
                    break
                # the faces that can come within reach of one: a corner within the longest edge of it
                grown = reach[body] + longest
                close = ((vertices >= c.min(0) - grown) & (vertices <= c.max(0) + grown)).all(1)
                closest, distance, inside = nearest_on_triangles(c, vertices[faces[close[faces].any(1)]], reach[body])
                near = np.flatnonzero((distance <= thickness + reach[body]) & ~(inside & closed))
                if len(near) <= self.n_slots or spacing > size:
                    break
                spacing *= 2
            if not len(c):
                continue
            near = near[np.linspace(0, len(near) - 1, min(len(near), self.n_slots)).round().astype(np.int64)]
            arms[body, :len(near)] = (closest[near] - centre[body]) @ rotation[body]  # R^T (x - p)
            used[body, :len(near)] = True
        used = torch.from_numpy(used)
        self._slots = (torch.from_numpy(arms).to(q.dtype), used)
        self.contact_mass = torch.cat([self.contact_mass[:, :-self.n_slots],
                                       torch.where(used, self._slot_share[:, None], 0.0)], 1)
        self._acted = self._state = None

    def recenter(self, q, q_dot):
        """The map's change of chart (``KinematicMap.recenter``), the acting points' x and J at q carried
        over to it rather than made anew: x stays, and so do J's columns of the translation and of
        the learned coordinates, the world rotation R = R_ref exp(theta) being the same in either
        chart; at theta = 0 the rotation's are dx/dtheta_k = R_ref (e_k x r) = (R_ref e_k) x (x - p),
        with the new R_ref."""
        moved, moving = self.map.recenter(q, q_dot)
        if moved is not q and self._acted is not None and self._acted[0] is q:
            x, jacobian = self._acted[1]
            axes = self.map.pose(moved)["rotation"].transpose(1, 2)[:, None]  # (B, 1, 3, 3): row k is R_ref e_k
            turning = torch.linalg.cross(axes, (x - moved[:, None, :3])[:, :, None], dim=-1).transpose(2, 3)
            self._acted = (moved, (x, torch.cat([jacobian[..., :3], turning, jacobian[..., 6:]], -1)))
        return moved, moving

    def _rotations(self, q):
        """Each body's world rotation (B, 3, 3) at q; the last one is kept, as the factor of M is: the
        planes, the push back and their energy ask about the same q within an evaluation."""
        if self._posed is None or self._posed[0] is not q:
            self._posed = (q, self.map.pose(q)["rotation"])
        return self._posed[1]

    def _owner_frames(self, q):
        """Each pair's owner's rotation (B, P, 3, 3) and translation (B, P, 3) at q (any row for no owner)."""
        owner = self.planes.owner.clamp(min=0)
        return self._rotations(q)[owner], q[:, :3][owner]

    def _planes_at(self, q, x=None, q_dot=None):
        """The contact planes at q: a plane on another body's surface moves with that body's rigid motion
        since the step began, normal R R_0^T n_0 and offset through its translation, and with its
        deformation, offset + n . J_s (q - q_0) (J_s the learned columns of the owner's J where the pair
        meets it, ``_shaping``); given the contact points x (B, C, 3) and q_dot, it moves at the velocity
        p_dot + omega x (x - p) + J_s q_dot of the owner's material there. So the two bodies meet through
        one spring between them within the step, not a surface a step behind."""
        planes = self.planes
        if self._carried is None:
            return planes
        met = planes.owner >= 0
        rotation, origin = self._owner_frames(q)
        normal = (rotation @ self._carried[0][..., None])[..., 0]
        offset = (normal * origin).sum(-1) + self._carried[1]
        owner = planes.owner.clamp(min=0)
        if self._owner_shape is not None:
            shaped, start = self._owner_shape
            offset = offset + (normal * (shaped @ (q - start)[owner][..., None])[..., 0]).sum(-1)
        velocity = planes.velocity
        if x is not None:
            spin = (self._rotations(q) @ body_angular_velocity(q[:, 3:6], q_dot[:, 3:6])[..., None])[..., 0]
            velocity = q_dot[:, :3][owner] + torch.linalg.cross(spin[owner], x.repeat(1, planes.slots, 1) - origin)
            if self._owner_shape is not None:
                velocity = velocity + (self._owner_shape[0] @ q_dot[owner][..., None])[..., 0]
        return dataclasses.replace(planes, normal=torch.where(met[..., None], normal, planes.normal),
                                   offset=torch.where(met, offset, planes.offset),
                                   velocity=torch.where(met[..., None], velocity, planes.velocity))

    def _contact_motion(self, q, q_dot):
        """The contact points' positions and velocities (B, C, 3)."""
        x, jac = self._acting(q)
        return x[:, :self.n_contact], (jac[:, :self.n_contact] @ q_dot[:, None, :, None])[..., 0]

    def _surface_motion(self, q, t: float, fresh: bool = False, keep: bool = True):
        """The bodies' surface vertices at q (time t) and their velocities from where the last step
        began, as numpy (B, V, 3) each; None without bodies to meet. ``keep``: remember them for the next."""
        if self.obstacles is None or self.obstacles.bodies is None:
            return None
        where = self.map.embed(q, SURFACE).numpy()
        last = None if fresh else self._surfaces
        moving = (where - last[1]) / (t - last[0]) if last is not None and t > last[0] else np.zeros_like(where)
        if keep:
            self._surfaces = (t, where)
        return where, moving

    def _contact_energy(self, q, x):
        """1/2 sum k w_i d_i^2 over every contact pair at q, J (B,)."""
        if self.planes is None:
            return torch.zeros(x.shape[0], dtype=x.dtype)
        planes = self._planes_at(q)
        depth = planes.depth(x)
        share = self.contact_mass.repeat(1, planes.slots)
        reduced = self._reduced(planes)
        share = share if reduced is None else share * reduced
        return 0.5 * (self.per_body["contact_stiffness"][:, None] * share * depth**2).sum(-1)

    def forces(self, q, q_dot, s: State, rayleigh: bool = True, capped: bool = True):
        """Generalized forces split as (conservative, point loads, dissipative), each (B, n). Sets
        ``transfer`` (B,), the power that moving anchors put into the springs of each body's points (f . u
        of each spring whose other end moves at u: another body's surface, a pin on its path), booked as
        work done on it with the loads'. Things that move with time are taken at ``clock``.

        ``capped``: the contact's dashpots, friction and springs held to what an explicit step of
        ``step`` takes stably (contact.plane_forces); an implicit step takes them as they are, its
        damping ratios at most OVERDAMPED.

        Conservative: gravity, contact springs, -grad V. Non-conservative: point loads, contact damping,
        friction, rolling resistance, drag, Rayleigh damping (left out with ``rayleigh=False``, for an
        integrator that takes it implicitly). All but the rolling resistance (a torque) and the Rayleigh
        term act through J^T f of the points they act on; gravity (sum m J)^T g and drag, the same
        -c m v at every mass point, sum J^T m (-c J q_dot) = -c M q_dot.
        """
        nc, npin = self.n_contact, self.n_pin
        jc, jp, jl = s.jacobian[:, :nc], s.jacobian[:, nc:nc + npin], s.jacobian[:, nc + npin:]
        self.transfer = torch.zeros(q.shape[0], dtype=q.dtype)
        # each contact pair's spring and other forces (B, P, 3), its dashpot coefficient and mu N (B, P)
        self.pair_forces = None
        self.pressed = None  # set by an implicit step after its forces
        self.rolling = None  # the rolling resistance's damping per newton (B, n, n) and N (B,), for an implicit step
        self.smooth_step = None  # (its matrix, the pins' K, b) of the last implicit step (implicit_change)
        conservative = (self.gravity @ s.mass.moment)
        if npin:  # f = -k m_i (x_i - a_i) at each pin, a_i its place at this time
            pull, moving = self.pin_pull(s.x[:, nc:nc + npin], self.clock)
            conservative = conservative + _jt(jp, pull)
            self.transfer = self.transfer + (pull * moving).sum((1, 2))  # a moving pin stretches its spring
        grad_v = self.potential_gradient(q)
        if grad_v is not None:
            conservative = conservative - grad_v
        loads = _jt(jl, self.active_loads)
        dissipative = -self.per_body["drag"][:, None] * (s.mass_matrix @ q_dot[..., None])[..., 0]
        if rayleigh:
            dissipative = dissipative - (self.damping_matrix(s.mass_matrix) @ q_dot[..., None])[..., 0]
        planes = None if self.planes is None else self._planes_at(q, s.x[:, :nc], q_dot)
        if planes is not None and bool((planes.depth(s.x[:, :nc]) > 0).any()):
            self.touched = True
            env, slots = self.env, planes.slots  # in flight no contact force acts: the caps' solves are skipped with them
            chol = self.factor(s.mass_matrix)[0] if capped else None  # the caps' (an implicit step takes none)
            mobile = fastest = None
            if capped:
                whitened = self._whiten(chol, jc)  # once per evaluation, for the caps below
                mobile = self._mobile_mass(whitened) if self.deforms else None
                pairs = whitened.repeat(1, 1, slots, 1)  # (B, n, S C, 3): each pair's point
                fastest = lambda c, basis: self._fastest_rate(torch.einsum("bnpi,bpik->bnpk", pairs, basis), c)
            spring, resist, pressing, dashpot = plane_forces(
                s.x[:, :nc], s.v[:, :nc], self.contact_mass, planes, self.per_body["contact_stiffness"],
                self.contact_damping if capped else self.contact_damping.clamp(max=OVERDAMPED),
                env.friction_regularization, self.step if capped else None, mobile,
                fastest, self._reduced(planes))
            self.pair_forces = (spring, resist, dashpot, planes.friction * pressing)
            per_point = lambda f: f.view(f.shape[0], slots, nc, 3).sum(1)
            conservative = conservative + _jt(jc, per_point(spring))
            dissipative = dissipative + _jt(jc, per_point(resist))
            if self._carried is not None:
                loads = loads + self.reactions(q, s.x[:, :nc].repeat(1, slots, 1), spring + resist, planes.owner)
                met = (planes.owner >= 0)[..., None]
                self.transfer = self.transfer + (spring * planes.velocity * met).sum((1, 2))
            if bool((self.per_body["rolling_lever"] > 0).any()):
                dissipative = dissipative + self.rolling_resistance(q, q_dot, chol, pressing.sum(-1))
        return conservative, loads, dissipative

    def reactions(self, q, x, force, owner):
        """Generalized forces (B, n) of the push back on the bodies whose surfaces other bodies' points
        met: -f at the same point x, through the owner's rigid coordinates, Q_p = -f and
        Q_theta = T^T R^T ((x - p) x -f) (T the right Jacobian of exp at theta, R its world rotation),
        so every pair's forces are equal and opposite on one line and momentum and angular momentum
        are kept, and through its learned ones where it meets the pair, Q_s = J_s^T (-f) (``_shaping``):
        a body pressed on bends under it. Booked as work done on the owner, as a load's is.
        ``x``, ``force`` (B, P, 3) of each pair; ``owner`` (B, P) its surface's body, -1 for none."""
        met = owner >= 0
        rows, push, at = owner[met], -force[met], x[met]
        arm = at - q[rows, :3]
        rotation = self._rotations(q)
        torque = torch.zeros(q.shape[0], 3, dtype=q.dtype).index_add_(0, rows, torch.linalg.cross(arm, push))
        linear = torch.zeros(q.shape[0], 3, dtype=q.dtype).index_add_(0, rows, push)
        turn = right_jacobian(q[:, 3:6]).transpose(1, 2) @ rotation.transpose(1, 2) @ torque[..., None]
        pushed = torch.cat([linear, turn[..., 0], torch.zeros_like(q[:, 6:])], 1)
        if self._owner_shape is not None:
            bent = (self._owner_shape[0][met].transpose(-1, -2) @ push[..., None])[..., 0]
            pushed = pushed.index_add(0, rows, bent)
        return pushed

    def rolling_resistance(self, q, q_dot, chol, pressing):
        """Generalized force (B, n) of the ground's torque against each body's turning, for a footprint of
        lever arm a pressed with N: tau = -N a omega / sqrt(|omega|^2 + (eps / a)^2), as Coulomb friction
        resists slip with mu N, regularized alike (eps: the body's rolling_regularization, at the lever's
        end).

        A body that yields where it lands presses a flat of itself onto the ground, and to roll or pivot
        over it must press the next one flat: the footprint's pressure sits a ahead of the contact and
        the ground's reaction turns against the roll (rolling resistance). Learned coordinates cannot
        flatten a body that far, so the torque stands for the footprint they cannot make. A round rigid
        body rolling on its support point has the small one of a hard ball on a hard floor
        (SUPPORT_ROLLING), which brings a rolling or rocking ball to rest.

        omega = T theta_dot in the body frame, T the right Jacobian of exp at theta, so the torque does
        the work tau . omega through Q_theta = T^T tau = -c T^T T theta_dot with
        c = N a^2 / sqrt(a^2 |omega|^2 + eps^2). As the contact's dampers, c is capped so that its rate
        in M^-1 stops the body's turning within a step at most (rate h <= 1), given the factor ``chol``
        of M; without it (an implicit step) it is not, and ``rolling`` keeps c T^T T per newton of N,
        and N, for the step to take at its end with the normal force it solves for.
        """
        b, n = q_dot.shape
        lever, eps = self.per_body["rolling_lever"], self.per_body["rolling_regularization"]
        turn = right_jacobian(q[:, 3:6])  # T
        omega = (turn @ q_dot[:, 3:6, None])[..., 0]
        reach = torch.sqrt(lever**2 * (omega * omega).sum(-1) + eps**2).clamp(min=1e-300)
        c = pressing.clamp(min=0.0) * lever**2 / reach
        torque_map = torch.zeros(b, n, 3, dtype=q.dtype)  # J_omega^T: body torques to generalized forces
        torque_map[:, 3:6] = turn.transpose(1, 2)
        if chol is None:
            per_newton = (lever**2 / reach)[:, None, None] * torque_map @ torque_map.transpose(1, 2)
            self.rolling = (per_newton, pressing.clamp(min=0.0))
            return -c[:, None] * (torque_map @ omega[..., None])[..., 0]
        whitened = torch.linalg.solve_triangular(chol, torque_map, upper=False)[:, :, None]  # one "point", 3 axes
        rate = self._fastest_rate(whitened, c[:, None])
        c = c * within_a_step(rate, math.inf if self.step is None else self.step)[:, 0]
        return -c[:, None] * (torque_map @ omega[..., None])[..., 0]

    def restitute(self, q, q_dot, incoming, q_dot_before):
        """Newton's law of restitution for the centre of mass over a whole impact on the ground or a
        collider: it leaves the surface at most e times as fast as it came, v_out <= e v_in, along the
        surface's normal n.

        The penalty contact resolves the impact itself, but what a body keeps of it also depends on what
        its coordinates store and give back: a learned deformation takes part of the impact and returns
        it, and a dashpot capped to stay stable within a step damps less than asked. Called after each
        step, with the state it ended in (q, q_dot) and the velocity it began with: an impact begins at
        the step at whose end (or within which: an implicit step can hold a whole bounce) a contact point
        first reaches into the ground or a collider while the centre of mass comes towards it (n is then
        the mean normal of the planes it reached, ``incoming`` (B,) the centre of mass's speed towards
        them, relative to their surfaces, as the step began, before the spring slowed it, or the
        fastest it moved towards them later in the impact, gravity acting through its first step or a
        body landing on it pushing it in; NaN in flight)
        and ends when none is reached, unless one lies within RETOUCH of its surface while the centre of
        mass still comes in (a learned face springing off midway). A point that reaches while the
        centre of mass moves away (a learned surface still wobbling as the body leaves) brings no
        impact: taken as one with v_in = 0, its end would stop the body. The excess of the speed away
        over e v_in is then taken out of the centre of mass's velocity along n (the translation of a
        free body's centre of mass, uncoupled in M from its turning and its deformation), and its
        kinetic energy 1/2 M (v^2 - (e v_in)^2) is returned as dissipated; for a rigid body coming
        faster than IMPACT_SPEED, at the end of every step of the impact (taken only at its end, a 1 m
        cube dropped 1 m at restitution 0.3 rose 0.105 m where e^2 h is 0.090: its springs pushed it
        off at 1.9 m/s within the step it left in). Between two bodies the same law holds for their
        relative velocity, shared as momentum is (``_restitute_bodies``).
        Returns (q_dot, incoming, dissipated (B,)).
        """
        dissipated = torch.zeros(q.shape[0], dtype=q.dtype)
        if self.impact is None:
            return q_dot, incoming, dissipated
        planes = self._planes_at(q)
        depth = planes.signed_depth(self._acting(q)[0][:, :self.n_contact])
        pressed = depth > 0  # at the step's end
        # or within it: an implicit step can hold a whole bounce
        within = pressed if self.pressed is None else pressed | self.pressed
        if self._carried is not None or not bool(torch.isnan(self._meeting[0]).all()):
            q_dot, dissipated = self._restitute_bodies(q_dot, q_dot_before, planes, depth, within)
        grounded = planes.owner < 0  # the ground's and the colliders' planes
        touching = (pressed & grounded).any(1)  # at the step's end
        reached = within & grounded
        weights = reached.to(q.dtype)[..., None]
        surface = (planes.velocity * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        starting = reached.any(1) & torch.isnan(incoming)
        if bool(starting.any()):
            normal = (planes.normal * weights).sum(1)
            normal = normal / normal.norm(dim=-1, keepdim=True).clamp(min=1e-300)
            towards = -((q_dot_before[:, :3] - surface) * normal).sum(-1)
            starting = starting & (towards > 0)  # a point that reaches while the body moves away brings no impact
            self._impact_normal = torch.where(starting[:, None], normal, self._impact_normal)
            incoming = torch.where(starting, towards, incoming)
        n = self._impact_normal
        rise = ((q_dot[:, :3] - surface) * n).sum(-1)
        # pushed in further during its impact (by gravity within its first step, by a body landing on it),
        # it came in that much faster
        incoming = torch.maximum(incoming, -rise)
        # a learned surface that wobbles off the surface while its centre of mass still comes in is
        # still in its impact: ended there, the touch that follows would start another with the speed
        # left then, a fraction of the first's
        near = torch.where(grounded, depth, -torch.inf).amax(1) > -RETOUCH
        ended = _impact_ends(touching, near, rise)
        leaving = ended & ~torch.isnan(incoming)
        # a rigid body coming fast is capped at every step of its impact; a learned body only as it
        # leaves: its coordinates take part of the impact and give it back, its contact parts and meets again
        capped = leaving if self.deforms else leaving | (incoming.nan_to_num() > IMPACT_SPEED)
        if not bool(capped.any()):
            return q_dot, torch.where(ended, torch.nan, incoming), dissipated
        kept = torch.where(capped, torch.minimum(rise, _allowed(self.impact, incoming)), rise)
        dissipated = dissipated + 0.5 * self.masses.sum(-1) * (rise**2 - kept**2)
        q_dot = torch.cat([q_dot[:, :3] + (kept - rise)[:, None] * n, q_dot[:, 3:]], 1)
        return q_dot, torch.where(ended, torch.nan, incoming), dissipated

    def _restitute_bodies(self, q_dot, q_dot_before, planes, depth, within):
        """Newton's law over an impact between two bodies a and b: their centres of mass part along n
        at most e = sqrt(e_a e_b) times as fast as they met, v_out <= e v_in for the relative velocity
        (v_a - v_b) . n, n the mean normal of the planes their points reached on each other (from b
        towards a). The impact begins at the step within which a point of one reaches the other
        (``within`` (B, P), v_in from the velocities the step began with) while they close (v_in > 0:
        surfaces that touch as the bodies part bring none, ``restitute``) and ends at the first step
        that ends with none reached (``depth`` (B, P) > 0), unless a point lies within RETOUCH of the
        other while they still close (as against the ground: a learned face springing off midway). A
        touch while they part, within the slowest deformation's period of either (``give_period``)
        after an impact between them ended, carries on that impact with its v_in: a squashed face
        springing back onto the other would push them apart again, past e v_in. At its end the
        excess is taken out as an impulse between the two, -mu (rise - kept) on a and the
        opposite on b (mu = M_a M_b / (M_a + M_b)), so momentum is kept, and each body's loss of
        kinetic energy is returned as dissipated (B,)."""
        b = q_dot.shape[0]
        owned = planes.owner >= 0
        rows = torch.arange(b)[:, None].expand_as(planes.owner)

        def met(mask):  # which bodies meet (B, B) and the sum of their planes' normals, from b towards a
            mask = mask & owned
            touching = torch.zeros(b, b, dtype=torch.bool)
            touching[rows[mask], planes.owner[mask]] = True
            normals = torch.zeros(b, b, 3, dtype=q_dot.dtype).index_put_(
                (rows[mask], planes.owner[mask]), planes.normal[mask], accumulate=True)
            return touching | touching.T, normals - normals.transpose(0, 1)

        pressed, _ = met(depth > 0)
        near, _ = met(depth > -RETOUCH)
        meeting, normals = met(within)
        incoming, normal, last, ended = self._meeting
        starting = meeting & torch.isnan(incoming)
        if bool(starting.any()):
            unit = normals / normals.norm(dim=-1, keepdim=True).clamp(min=1e-300)
            closing = -((q_dot_before[:, None, :3] - q_dot_before[None, :, :3]) * unit).sum(-1)
            # surfaces that meet while the bodies part bring no impact, or carry on the one just ended
            window = torch.maximum(self.give_period[:, None], self.give_period[None, :])
            resumed = starting & (closing <= 0) & ~torch.isnan(last) & (self.clock - ended <= window)
            starting = starting & (closing > 0)
            normal = torch.where(starting[..., None], unit, normal)
            incoming = torch.where(starting, closing, torch.where(resumed, last, incoming))
        rise = ((q_dot[:, None, :3] - q_dot[None, :, :3]) * normal).sum(-1)
        leaving = _impact_ends(pressed, near, rise) & ~torch.isnan(incoming)
        dissipated = torch.zeros(b, dtype=q_dot.dtype)
        if bool(leaving.any()):
            mass = self.masses.sum(-1)
            restitution = torch.sqrt(self.impact[:, None] * self.impact[None, :])
            excess = torch.where(leaving, (rise - _allowed(restitution, incoming)).clamp(min=0.0), 0.0)
            share = mass[None, :] / (mass[:, None] + mass[None, :])  # M_b / (M_a + M_b) of a's row
            kick = -(share * excess)[..., None] * normal  # on a, for each b it leaves
            moved = q_dot[:, :3] + kick.sum(1)
            dissipated = 0.5 * mass * ((q_dot[:, :3] ** 2).sum(-1) - (moved**2).sum(-1))
            q_dot = torch.cat([moved, q_dot[:, 3:]], 1)
            last, ended = torch.where(leaving, incoming, last), torch.where(leaving, self.clock, ended)
            incoming = torch.where(leaving, torch.nan, incoming)
        self._meeting = (incoming, normal, last, ended)
        return q_dot, dissipated

    @property
    def holds_flat(self) -> bool:
        """Whether impacts that begin flat over their support keep the body from tipping (``hold_landings``):
        wherever Newton's law holds over impacts; a learned body is held by its rigid part, its
        deformation left free to take its share of the impact."""
        return self.impact is not None

    def hold_landings(self, q, q_dot, incoming):
        """Newton's law's companion for turning, after ``restitute``: a body in an impact (on the
        ground or a collider, ``incoming`` (B,) not NaN, or from above on other bodies) that began flat
        over what it landed on (``_flat_over``: the points that reach the ground, colliders and the
        bodies below it in the step, and those of the bodies below that reach it) turns with what it
        landed on (the ground and colliders held still, bodies their mean spin) about the axes of
        their touching plane while it bounces, its spin about the plane's normal left alone: at each
        step's end here, and within the implicit step by a damper (``_holding``). A body it lands on
        that is itself flat on what carries it (its points pressed on surfaces facing up) is held so
        too meanwhile, its spin in that plane to zero: a rigid support would not rock under the
        impact, and the body landing, held to its support's spin, would leave the bounce turning.
        Returns (q_dot, the kinetic energy (B,) J this takes).

        A rigid contact's impulses shift within the touching points' hull and end such an impact
        without tipping; the penalty springs instead push at their own centroid, which turns a body
        whose centre of mass is off it (docs/physics.md, "Several bodies"). Landing on an edge or a
        corner, or past its edge, a body still tips; come to rest, it turns freely again."""
        b = q.shape[0]
        zero = torch.zeros(b, dtype=q.dtype)
        if not self.holds_flat:
            return q_dot, zero
        below, on_below = self._landing_on()
        landing = ~torch.isnan(incoming) | below.any(1)
        was, flat, flat_normal, began = self._landed_flat
        begun = landing & ~was
        if bool(begun.any()):
            flat, flat_normal = flat.clone(), flat_normal.clone()  # a snapshot may hold these
            began = torch.where(begun, self.clock - self.step, began)
            planes, x, within = self._pressed_pairs(q)
            owner = planes.owner
            supported = within & ((owner < 0) | below.gather(1, owner.clamp(min=0)) & (owner >= 0))
            for a in torch.nonzero(begun).flatten().tolist():
                others = below[a]
                theirs = within[others] & (owner[others] == a)
                touching = torch.cat([x[a][supported[a]], x[others][theirs]])
                pushes = torch.cat([planes.normal[a][supported[a]], -planes.normal[others][theirs]])
                flat[a], flat_normal[a] = _flat_over(touching, pushes, q[a, :3])
        flat = flat & landing
        if not bool(flat.any()):
            self._landed_flat = (landing, flat, flat_normal, began)
            return q_dot, zero
        # held while it bounces: until it has moved along the normal no faster than IMPACT_SPEED for a
        # whole period of the contact's springs, 2 pi / sqrt(k), and of the slowest deformation of it and
        # of the bodies it lands on (``began`` then counts from its last fast step), so not let go at
        # the bounce's turning point, where it is slow for a step while the springs still push hardest
        # (on a box still bouncing on the ground, the springs' pushes then spun it off the box's
        # corner), nor while a jelly's face under it, squashed, has yet to spring back (it then pushed
        # at its centroid and spun it off); come to rest on it, it turns freely again, to settle or to
        # tip when pushed
        rise = ((q_dot[:, :3] - on_below(q_dot[:, :3])) * flat_normal).sum(-1)
        began = torch.where(rise.abs() > IMPACT_SPEED, self.clock, began)
        period = torch.maximum(2 * math.pi / torch.sqrt(self.flat_stiffness), self.give_period)
        period = torch.maximum(period, torch.where(below, self.give_period, 0.0).amax(1))
        flat = flat & (self.clock - began <= period)
        carrying = (below & flat[:, None]).any(0) & ~flat
        if bool(carrying.any()):  # what a held landing lands on, flat on what carries it
            flat, flat_normal = flat.clone(), flat_normal.clone()
            planes, x, within = self._pressed_pairs(q)
            carried = within & ((planes.normal @ self._up) > FLAT_UP)
            for j in torch.nonzero(carrying).flatten().tolist():
                flat[j], flat_normal[j] = _flat_over(x[j][carried[j]], planes.normal[j][carried[j]], q[j, :3])
        self._landed_flat = (landing, flat, flat_normal, began)
        if not bool(flat.any()):
            return q_dot, zero
        return self._hold_flat(q, q_dot, flat, flat_normal, on_below(self._spin(q, q_dot)))

    def _pressed_pairs(self, q):
        """The contact planes at q, each pair's point (B, P, 3) and whether it is pressed (B, P), at the
        step's end or within it."""
        planes = self._planes_at(q)
        points = self._acting(q)[0][:, :self.n_contact]
        within = planes.signed_depth(points) > 0
        within = within if self.pressed is None else within | self.pressed
        return planes, points.repeat(1, planes.slots, 1), within

    @property
    def _up(self):
        """The unit vector against gravity (3,); zero without gravity."""
        return -self.gravity / self.gravity.norm().clamp(min=1e-300)

    def _landing_on(self):
        """Which bodies (B, B) each lands on from above in an impact (``_meeting``, their normal within
        acos(FLAT_UP) of up), and the mean over those of rows (B, k), zero for none (the ground)."""
        meeting, normal = self._meeting[:2]
        below = ~torch.isnan(meeting) & ((normal @ self._up) > FLAT_UP)
        count = below.sum(1, keepdim=True)
        return below, lambda rows: torch.where(count > 0, (below.to(rows.dtype) @ rows) / count.clamp(min=1), 0.0)

    def _holding(self, q, q_dot, mass, h):
        """Within the implicit step, a damper on each held landing's turning (``hold_landings``) about
        the axes u of its touching plane, relative to its support's spin omega_s, taken at the step's
        end: the torque -c C^T (C theta_dot - U omega_s), C = U R T (U the axes' rows), c HOLD_RATE
        times the body's largest moment of inertia over h, so that the step ends with the body turning
        as its support does and has not turned on the way (held at the steps' ends alone, the body
        still turned within each); ((B, n, n) the damping c C^T C, (B, n) the pull c C^T U omega_s),
        or None without a held landing."""
        _, flat, normal, _ = self._landed_flat
        if not self.holds_flat or not bool(flat.any()):
            return None
        b, n = q_dot.shape
        damping, pull = torch.zeros(b, n, n, dtype=q.dtype), torch.zeros(b, n, dtype=q.dtype)
        axes = _plane_axes(normal)  # U (B, 2, 3)
        turn = axes @ self._rotations(q) @ right_jacobian(q[:, 3:6])  # C (B, 2, 3)
        inertia = mass[:, 3:6, 3:6].diagonal(dim1=-2, dim2=-1).amax(-1)
        rate = torch.where(flat, HOLD_RATE * inertia / h, 0.0)[:, None, None]
        support = self._landing_on()[1](self._spin(q, q_dot))
        damping[:, 3:6, 3:6] = rate * turn.transpose(1, 2) @ turn
        pull[:, 3:6] = (rate * turn.transpose(1, 2) @ (axes @ support[..., None]))[..., 0]
        return damping, pull

    def _spin(self, q, q_dot):
        """Each body's world angular velocity (B, 3), a learned body's by its rigid part: R T(theta) theta_dot."""
        return (self._rotations(q) @ body_angular_velocity(q[:, 3:6], q_dot[:, 3:6])[..., None])[..., 0]

    def _hold_flat(self, q, q_dot, held, normal, support):
        """The bodies ``held`` (B,) turn with their support (its world angular velocity ``support``
        (B, 3)) about every axis in the plane of ``normal`` (B, 3): omega <- omega - P (omega - omega_s),
        P = I - n n^T, their spin about n left alone; (q_dot, the kinetic energy this takes (B,))."""
        spin = self._spin(q, q_dot)
        relative = spin - support
        relative = relative - (relative * normal).sum(-1, keepdim=True) * normal  # in the plane
        body = (self._rotations(q).transpose(1, 2) @ (spin - relative)[..., None])[..., 0]
        rates = torch.linalg.solve(right_jacobian(q[:, 3:6]), body[..., None])[..., 0]
        moved = torch.where(held[:, None], torch.cat([q_dot[:, :3], rates, q_dot[:, 6:]], 1), q_dot)
        mass = self.mass_matrix(q)
        energy = lambda v: 0.5 * (v[:, None, :] @ mass @ v[..., None])[:, 0, 0]
        return moved, torch.where(held, energy(q_dot) - energy(moved), 0.0)

    def loaded(self, t0: float, t1: float) -> bool:
        """Whether a point load acts in the step [t0, t1] (by its midpoint, as ``set_interval``) or the
        pins move in it (a sleeping body wakes for either)."""
        mid = 0.5 * (t0 + t1)
        on = (self.load_windows[..., 0] <= mid) & (mid < self.load_windows[..., 1])
        if self.env.pin_path is not None and not torch.equal(self.pin_place(t0)[0], self.pin_place(t1)[0]):
            return True
        return bool((on & (self.load_vectors != 0).any(-1)).any())

    @property
    def touchable(self) -> bool:
        """Whether contact points can meet a surface, the ground or a collider (its springs may set the steps)."""
        return self.n_contact > 0 and (self.env.ground_height is not None or self.obstacles is not None)

    def clear_of_contact(self, q, q_dot, t: float, span: float) -> bool:
        """Whether no contact point of any body can reach the ground or a collider within [t, t + span]:
        above the ground by twice its ballistic drop, (-v_z)+ span + 1/2 g span^2, plus SLACK (a frame
        begun in flight that touches is redone at the contact's steps: a wasted attempt), and out of
        every collider's reach at its speed."""
        if not self.touchable:
            return True
        x, v = self._contact_motion(q, q_dot)
        if self.env.ground_height is not None:
            drop = (-v[..., 2]).clamp(min=0.0) * span + 0.5 * max(0.0, -float(self.gravity[2])) * span**2
            ground = self.env.ground_height + self._ground_lift(q)
            if not bool((x[..., 2] - ground[:, None] >= 2 * drop + SLACK).all()):
                return False
        if self.obstacles is None:
            return True
        return self.obstacles.clear(x.numpy(), v.numpy(), t, span, self._surface_motion(q, t, keep=False))

    def touching(self, q, t: float) -> torch.Tensor:
        """Which bodies (B,) press a contact point into the ground, a collider or another body at ``q``,
        time t, or have another body's point pressed into them (a box tipped over another's edge rests
        on that edge's points, not on its own): the last step's planes moved on to t, a collider's by
        its surface's velocity."""
        if self.planes is None or not self.n_contact:
            return torch.zeros(q.shape[0], dtype=torch.bool)
        planes = self._planes_at(q)
        ahead = torch.where(planes.owner < 0, (t - self._started) * (planes.normal * planes.velocity).sum(-1), 0.0)
        pressed = planes.signed_depth(self._acting(q)[0][:, :self.n_contact]) + ahead > 0
        touching = pressed.any(1)
        touching[planes.owner[pressed & (planes.owner >= 0)]] = True
        return touching

    @property
    def damped(self) -> bool:
        """Whether Rayleigh damping acts on a deformation coordinate (``damping_matrix`` is not zero)."""
        return self.deforms and bool((self.per_body["damping"] > 0).any())

    def damping_matrix(self, mass_matrix):
        """Rayleigh D = alpha P M P on the deformation coordinates (P selects them)."""
        p = self.elastic
        return self.per_body["damping"][:, None, None] * mass_matrix * p[:, None] * p[None, :]

    def potential_gradient(self, q):
        if self.rest_stiffness is None:  # the map has no potential
            return None
        closed_form = self.map.potential_gradient(q)
        if closed_form is not None:
            return closed_form
        return torch.func.grad(lambda qq: self.map.potential(qq).sum())(q)

    def _rest_stiffness(self):
        q0 = self.map.rest_coordinates()
        if self.map.potential(q0) is None:
            return None
        return self._stiffness(q0)

    def _stiffness(self, q):
        """d2V/dq2 per body (B, n, n)."""
        closed_form = self.map.potential_hessian(q)
        if closed_form is not None:
            return closed_form
        hess = torch.func.hessian(lambda qq: self.map.potential(qq).sum())(q)  # (B, n, B, n)
        return torch.stack([hess[i, :, i, :] for i in range(q.shape[0])])

    # -- equations of motion and energy ------------------------------------------------------
    def acceleration(self, q, q_dot):
        """q_ddot from M q_ddot = Q - J^T m d2x, and the powers of loads and of dissipation."""
        s = self.state(q, q_dot)
        conservative, loads, dissipative = self.forces(q, q_dot, s)
        q_ddot = self.solve(s.mass_matrix, conservative + loads + dissipative - s.mass.quadratic)
        return q_ddot, (loads * q_dot).sum(-1) + self.transfer, -(dissipative * q_dot).sum(-1)

    def implicit_change(self, q, q_dot, s: State, force, h: float, t0: float):
        """The velocity change dv of one implicit step (integrators.implicit_step), q_1 = q + h (v + v_1) / 2:

            M dv = h (Q(q, v) + 1/2 dQ_smooth + Q_c(q, q_1, v_1) - Q_c(q, v) - w D dv)

        The potential's and the pins' forces take the trapezoidal rule, linearized: dQ_smooth =
        -K (q_1 - q) + b, K their stiffness (the potential's Hessian, the pins' k J^T m J), b what moves
        on its own (the pins' places along their path). Away from rest the decoder's curvature can
        soften a direction past zero where the mass is nearly nil, so that M + h^2 K / 4 is not positive
        definite (a jelly landing from 5 cm went non-finite twice in 14 frames at 5 steps a frame): then
        that body's step takes the Hessian without its negative eigenvalues. The Rayleigh force -D v, whose decay is alpha
        on every deformation coordinate (D = alpha P M P, M uncoupled between the rigid and the learned
        coordinates at rest), is taken at weight w of the step's end, -D ((1 - w) v + w v_1), with
        w = (e^-x - 1 + x) / (x (1 - e^-x)), x = alpha h: then it decays exactly as e^-x a step, where
        the trapezoidal rule's (1 - x / 2) / (1 + x / 2) flips its sign past x = 2 and backward Euler's
        1 / (1 + x) lags (w runs from 1/2 at x = 0 to 1).

        The contact force Q_c replaces the one at the step's start. Each pair's spring gives the
        discrete gradient of its energy 1/2 k d+^2 between the depths d_0 and d_1 at the step's ends,
        k (d_1+^2 - d_0+^2) / (2 (d_1 - d_0)) along n: its work over the step is the change of its
        energy exactly, however far the step is from resolving it, when it starts or stops acting
        within the step (a point that reaches a surface in the step, one that leaves it), and while
        both ends are compressed it is the trapezoidal rule's k (d_0 + d_1) / 2. A step too long to
        resolve the spring, sqrt(k) h > RESOLVED_PHASE (a frame at rest, trajectory.REST_SUBSTEPS), takes
        it at the step's end instead, k d_1+ (backward Euler: a body resting on it holds still, where a
        pair meeting the surface within the step met the discrete gradient's weak force and hopped), the
        excess over the discrete gradient with the dissipative part; ``contact_speed`` keeps the
        fastest normal speed |n^T J v - n . u| of a pushed pair at a step's start (IMPACT_SPEED).
        The dashpot and the friction act at the end's velocity (backward Euler: they only take energy out) on the pairs
        compressed at its end: the dashpot with the coefficient the step began with, friction as the
        regularized Coulomb law -mu N t / sqrt(|t|^2 + eps^2) of the end's slip t, with the normal force
        N the step began with (a push under mu N holds: the body creeps at about eps, where a
        coefficient taken at the start would let it creep at the speed it began the step with), as
        the rolling resistance (with the normal force the step solves for, not the start's), and the
        normal force never pulls (where spring and dashpot together would, the pair's force is zero,
        and the spring's part of it is booked as dissipated, as in contact.plane_forces).
        d_1 = d_0 - h (n^T J (v + v_1) / 2 - n . u), u the surface's velocity: the geometry J is taken
        at the start. Newton's method on dv, from the step without contact (from rest if touching),
        friction's weight mu N / sqrt(|t|^2 + eps^2) taken at each iterate's slip and held in the
        tangent (iteratively reweighted: it converges from either side, where the exact tangent of
        that law, steep at t = 0, overshot and let a held box creep at 18 mm/s).
        ``force`` is Q(q, v) - J^T m d2x as the explicit methods take it. Returns dv (B, n), the
        dissipative force it applies beyond ``force``'s and the loads beyond its (B, n) (bodies that
        meet push back on each other: ``_coupled``), for the energy books.
        """
        nc, npin = self.n_contact, self.n_pin
        mass = s.mass_matrix
        damping = torch.zeros_like(mass)
        if self.damped:  # weighted so that its decay, alpha on the deformation, is exp(-alpha h) a step
            damping = _fitted_weight(self.per_body["damping"] * h)[:, None, None] * self.damping_matrix(mass)
        moving = torch.zeros_like(q_dot)  # b
        held = torch.zeros_like(mass)  # the pins' part of K
        if npin:  # f = -k m (x - a): K = k J^T m J, b = k J^T m (a(t + h) - a(t))
            jp = s.jacobian[:, nc:nc + npin]
            held = _pin_stiffness(self.env.pin_stiffness, self.pin_mass, jp)
            moving = _jt(jp, self.env.pin_stiffness * self.pin_mass[..., None]
                         * (self.pin_place(t0 + h)[0] - self.pin_place(t0)[0]))
        potential = None if self.rest_stiffness is None else self._stiffness(q)
        if self.support_contact is not None:  # the support point's arm turns with the body
            turning = self._support_stiffness(q, s)
            potential = turning if potential is None else potential + turning
        stiffness = held if potential is None else held + potential
        rayleigh = lambda dv: -(damping @ dv[..., None])[..., 0]
        holding = self._holding(q, q_dot, mass, h)  # a flat landing's turning held (hold_landings)
        if holding is not None:  # its torque pull - H v_1 at the step's end: pull - H v with the forces, H dv solved for
            held_damping, pull = holding
            force = force + pull - (held_damping @ q_dot[..., None])[..., 0]
            damping = damping + held_damping
            rayleigh = lambda dv: pull - (damping @ dv[..., None])[..., 0] - (held_damping @ q_dot[..., None])[..., 0]
        self.pressed = None
        start = self.pair_forces  # None: no contact force acted at the step's start
        planes = None if self.planes is None else self._planes_at(q, s.x[:, :nc], q_dot)
        if planes is not None:
            slots = planes.slots
            jacobian = s.jacobian[:, :nc].repeat(1, slots, 1, 1)  # (B, P, 3, n)
            if start is not None:
                springs, resists, dashpot, grip = start
                force = force - _jt(jacobian, springs + resists)
            if self.rolling is not None and self._carried is None:  # the step takes it at its end, with
                rolling, pressing = self.rolling  # the normal force it solves for
                force = force + pressing[:, None] * (rolling @ q_dot[..., None])[..., 0]
        base = mass + h * damping + 0.25 * h**2 * stiffness  # damping: w D
        softened = None if potential is None else self.factor(base)[1] != 0  # past zero, per body
        if softened is not None and bool(softened.any()):
            stiffness = held + torch.where(softened[:, None, None], _positive_part(potential), potential)
            base = mass + h * damping + 0.25 * h**2 * stiffness
        self.smooth_step = (base, held, moving)  # for implicit_step's second pass
        rhs = h * (force - 0.5 * h * (stiffness @ q_dot[..., None])[..., 0] + 0.5 * moving)
        if planes is None:
            change = self.solve(base, rhs)
            self._pins_power(q_dot, s, change, h, t0)
            return change, rayleigh(change), torch.zeros_like(change)
        along = torch.einsum("bpi,bpin->bpn", planes.normal, jacobian)  # n^T J
        depth = planes.signed_depth(s.x[:, :nc])  # d_0
        surface = (planes.normal * planes.velocity).sum(-1)  # n . u
        # where Newton's method starts: at rest for a body touching at the start, else without contact
        resting = (depth > 0).any(-1, keepdim=True)
        change = torch.zeros_like(q_dot) if bool(resting.all()) else torch.where(resting, 0.0, self.solve(base, rhs))
        if start is None and not bool((depth - h * ((along @ (q_dot + 0.5 * change)[..., None])[..., 0]
                                                    - surface) > 0).any()):
            self._pins_power(q_dot, s, change, h, t0)
            return change, rayleigh(change), torch.zeros_like(change)
        self.touched = True
        share = self.contact_mass.repeat(1, slots)
        reduced = self._reduced(planes)
        spring = self.per_body["contact_stiffness"][:, None] * (share if reduced is None else share * reduced)
        if start is None:  # a pair that reaches a surface within the step meets its spring alone there
            dashpot = grip = torch.zeros_like(depth)
        slide = jacobian - planes.normal[..., None] * along[:, :, None]  # (1 - n n^T) J
        unresolved = torch.sqrt(self.flat_stiffness) * h > RESOLVED_PHASE  # (B,): as the steps (fastest_rates)
        ending = unresolved[:, None].to(depth.dtype).expand_as(depth)
        drift = planes.velocity - surface[..., None] * planes.normal  # the surface's tangential velocity
        if self._carried is None:  # each body alone: its own small system
            contact = _Pairs(along, slide, depth, surface, drift, spring, dashpot, grip, ending)
            change, (pushing, resist, friction), resisting = self._newton(base, rhs, change, q_dot, contact, h,
                                                                          self.rolling)
            applied, loads = rayleigh(change) + resisting, torch.zeros_like(change)
        else:  # bodies meet: one system for all, each pair pushing on both
            change, (pushing, resist, friction), applied, loads = self._coupled(
                q, q_dot, s, base, rhs, change, planes, jacobian,
                _Pairs(along, slide, depth, surface, drift, spring, dashpot, grip, ending), h, start)
            applied = applied + rayleigh(change)
        self.pressed = pushing > 0  # a bounce may begin and end within the step (restitute)
        normal = ((along @ q_dot[..., None])[..., 0] - surface).abs() * self.pressed  # |v_n| at the start, pairs pushed
        self.contact_speed = max(self.contact_speed, float(normal.max()))
        self._pins_power(q_dot, s, change, h, t0)
        if self.rolling is not None and self._carried is None:
            applied = applied + self.rolling[1][:, None] * (self.rolling[0] @ q_dot[..., None])[..., 0]
        return change, applied if start is None else applied - _jt(jacobian, resists), loads

    def _newton(self, base, rhs, change, q_dot, pairs: "_Pairs", h: float, rolling=None):
        """Newton's method on the implicit step's contact (implicit_change) for the systems (B, n, n)
        ``base`` dv = ``rhs`` plus the pairs' forces: returns dv, each pair's (spring's push (B, P), the
        normal force's other part (B, P), friction (B, P, 3)) and the dissipative generalized force
        (B, n) they and the rolling resistance apply. In NumPy: a step iterates on a few small arrays,
        where each torch call costs several times NumPy's."""
        arrays = [t.numpy() for t in (base, rhs, change, q_dot)]
        numeric = _Pairs(*(getattr(pairs, f.name).numpy() for f in dataclasses.fields(pairs)))
        change, forces, resisting = _contact_newton(*arrays, numeric, h, self.env.friction_regularization,
                                                    None if rolling is None else rolling[0].numpy())
        return torch.from_numpy(change), tuple(map(torch.from_numpy, forces)), torch.from_numpy(resisting)

    def _coupled(self, q, q_dot, s: State, base, rhs, change, planes, jacobian, pairs: "_Pairs", h: float, start):
        """The implicit step of bodies that meet, as one system over all their coordinates (B n): a pair
        on another body's surface moves with that body's material there, u = G_o v_o with
        G_o = [1, -[r]x R T, J_s] at the point (r from the owner's origin, R its rotation, T the right
        Jacobian of exp, J_s the learned columns of its J there, ``_shaping``), so its rows are
        n^T J_b - n^T G_o and its force f pushes b by J_b^T f and the owner by -G_o^T f, on one line
        (momentum and angular momentum kept). Only the pairs with a plane take part (a point far from
        every other body has none: its rows would be zeros). The start's push back on
        the owners (forces' reactions, in the loads) and its anchors' power (``transfer``) are replaced
        by the step's. The rolling resistance stays at the step's start here.
        Returns dv (B, n), each pair's forces as _newton's, the dissipative generalized force on each
        body from its own pairs (B, n), and the push back on the owners beyond the start's (B, n),
        booked as their loads."""
        b, count, n = pairs.along.shape
        met = planes.owner >= 0
        owner = planes.owner.clamp(min=0)
        x = s.x[:, :self.n_contact].repeat(1, planes.slots, 1)
        rotation, origin = self._owner_frames(q)
        arm = x - origin  # r
        turn = rotation @ right_jacobian(q[:, 3:6])[owner]  # R T of each pair's owner
        carried = torch.zeros(b, count, 3, n, dtype=q.dtype)  # G_o
        carried[..., :3] = torch.eye(3, dtype=q.dtype) * met[..., None, None]
        carried[..., 3:6] = -hat(arm) @ turn * met[..., None, None]
        if self._owner_shape is not None:
            carried = carried + self._owner_shape[0]
        body, pair = torch.nonzero(planes.offset > FAR / 2, as_tuple=True)  # the pairs with a plane
        kept, its_owner = torch.arange(len(body)), owner[body, pair]

        def widen(mine, theirs):  # (K, k, n) on its body's and on its owner's coordinates -> (1, K k, B n)
            wide = torch.zeros(len(body), mine.shape[1], b, n, dtype=q.dtype)
            wide[kept, :, body] = mine
            wide[kept, :, its_owner] -= theirs
            return wide.reshape(1, -1, b * n)

        normal, owners = planes.normal[body, pair], carried[body, pair]
        along = widen(pairs.along[body, pair][:, None], normal[:, None] @ owners)
        slide = widen(pairs.slide[body, pair], owners - normal[..., None] * (normal[:, None] @ owners))
        moving = met[body, pair]  # an owned plane moves through its rows
        pick = lambda t: t[body, pair][None]
        joint = _Pairs(along, slide.reshape(1, len(body), 3, b * n), pick(pairs.depth),
                       torch.where(moving, 0.0, pairs.surface[body, pair])[None],
                       torch.where(moving[:, None], 0.0, pairs.drift[body, pair])[None], pick(pairs.spring),
                       pick(pairs.dashpot), pick(pairs.grip), pick(pairs.ending))
        wide_base = torch.block_diag(*base)[None]
        if start is not None:  # the start's push back and anchors' power, replaced below
            springs, resists = start[0], start[1]
            self.transfer = self.transfer - (springs * planes.velocity * met[..., None]).sum((1, 2))
            started = self.reactions(q, x, springs + resists, planes.owner)
        else:
            started = torch.zeros_like(q_dot)
        wide_rhs = (rhs - h * started).reshape(1, b * n)
        solved, (pushing, resist, friction), _ = self._newton(wide_base, wide_rhs, change.reshape(1, b * n),
                                                              q_dot.reshape(1, b * n), joint, h)
        change = solved.view(b, n)
        spread = lambda t: torch.zeros((b, count) + t.shape[2:], dtype=q.dtype).index_put_((body, pair), t[0])
        pushing, resist, friction = spread(pushing), spread(resist), spread(friction)
        mine = _jt(jacobian, resist[..., None] * planes.normal + friction)
        force = (pushing + resist)[..., None] * planes.normal + friction
        pushed = self.reactions(q, x, force, planes.owner)
        mean = q_dot + 0.5 * change
        anchors = (carried @ mean[owner][..., None])[..., 0]  # u_o at the step's mean velocity
        self.transfer = self.transfer + (pushing[..., None] * planes.normal * anchors * met[..., None]).sum((1, 2))
        return change, (pushing, resist, friction), mine, pushed - started

    def smooth_forces(self, s: State, t: float, lagrangian: bool = False):
        """The forces the implicit step's second pass takes at both ends of a step (integrators.implicit_step),
        at the state ``s`` and time t (B, n): gravity and the pins' pull, less the Coriolis and
        centrifugal terms J^T m d2x (M q_ddot = ...), or plus dT/dq with ``lagrangian`` (d/dt (M q_dot) = ...)."""
        nc, npin = self.n_contact, self.n_pin
        inertial = s.mass.kinetic_gradient if lagrangian else -s.mass.quadratic
        force = self.gravity @ s.mass.moment + inertial
        if npin:
            force = force + _jt(s.jacobian[:, nc:nc + npin], self.pin_pull(s.x[:, nc:nc + npin], t)[0])
        return force

    def _pins_power(self, q_dot, s: State, change, h: float, t0: float) -> None:
        """``transfer`` over an implicit step: the pins' power f . u as the mean of its values at the
        step's ends (the trapezoidal rule, as the step's other forces), the end's pull from the
        linearized x_1 = x + J h (v + dv / 2)."""
        if not self.n_pin or self.env.pin_path is None:
            return
        nc, npin = self.n_contact, self.n_pin
        x, jp = s.x[:, nc:nc + npin], s.jacobian[:, nc:nc + npin]
        ended = x + (jp @ (h * (q_dot + 0.5 * change))[:, None, :, None])[..., 0]
        def power(where, t):
            pull, moving = self.pin_pull(where, t)
            return (pull * moving).sum((1, 2))

        self.transfer = self.transfer + 0.5 * (power(ended, t0 + h) - power(x, t0))

    def energies(self, q, q_dot) -> dict[str, torch.Tensor]:
        """Kinetic 1/2 q_dot^T M q_dot, internal potential, gravity potential, contact spring and pin
        spring energy per body (J)."""
        nc, npin = self.n_contact, self.n_pin
        s = self.state(q, q_dot)  # kept for the next step, which starts here
        kinetic = 0.5 * (q_dot[:, None] @ s.mass_matrix @ q_dot[..., None])[:, 0, 0]
        gravity = -(self.masses * (self.map.embed(q, MASS) @ self.gravity)).sum(-1)
        pot = self.map.potential(q)
        potential = pot if pot is not None else torch.zeros_like(kinetic)
        contact, pins = torch.zeros_like(kinetic), torch.zeros_like(kinetic)
        acting = s.x  # the acting points (contact, pins, loads) at q
        if self.planes is not None:
            contact = self._contact_energy(q, acting[:, :nc])
        if npin:
            stretch = acting[:, nc:nc + npin] - self.pin_place(self.clock)[0]
            pins = 0.5 * (self.env.pin_stiffness * self.pin_mass * (stretch * stretch).sum(-1)).sum(-1)
        return {"kinetic": kinetic, "potential": potential, "gravity": gravity, "contact": contact, "pins": pins}

    def fastest_rates(self, q=None, rest: bool = True, contact: bool = True) -> "Rates":
        """The largest natural angular frequencies (rad/s) of the contact springs (unless ``contact`` is
        False: in flight) and pins, and of the potential, and the largest Rayleigh decay rate (1/s, top
        eigenvalue of M^-1 D), at rest (unless ``rest`` is False) and at ``q``: a pulled start sits where
        the potential is stiffer than at rest (the wall, the decoder's curvature), and a step sized at
        rest blows up there."""
        springs = float(self.flat_stiffness.max()) if contact and self.touchable else 0.0
        if self.n_pin:  # pins hold in flight too
            springs = max(springs, self.env.pin_stiffness)
        omega2, decay = 0.0, 0.0
        if not self.deforms and self.rest_stiffness is None:  # a rigid map: no potential, no Rayleigh damping
            return Rates(math.sqrt(springs), 0.0, decay)
        states = ([None] if rest else []) + ([q] if q is not None else [])
        for state in states:
            mass = self.mass_matrix(self.map.rest_coordinates() if state is None else state)
            chol, _ = self.factor(mass)
            if self.deforms:
                decay = max(decay, _top_eigenvalue(chol, self.damping_matrix(mass)))
            if self.rest_stiffness is not None:
                stiffness = self.rest_stiffness if state is None else self._stiffness(state)
                omega2 = max(omega2, _top_eigenvalue(chol, stiffness))
        return Rates(math.sqrt(springs), math.sqrt(omega2), decay)


class Rates(NamedTuple):
    """LagrangianSystem.fastest_rates: what sets an integrator's steps."""

    springs: float  # rad/s, the contact's and the pins' (linear springs)
    potential: float  # rad/s, the potential's stiffest (its wall stiffens away from rest)
    decay: float  # 1/s, the Rayleigh damping's fastest


def _top_eigenvalue(chol, matrix) -> float:
    """Largest eigenvalue of M^-1 A over the bodies (``_top_eigenvalues``)."""
    return float(_top_eigenvalues(chol, matrix).max())


def _top_eigenvalues(chol, matrix):
    """Each body's largest eigenvalue of M^-1 A (B,)."""
    return _eigenvalues(chol, matrix)[..., -1]


def _eigenvalues(chol, matrix):
    """Each body's eigenvalues of M^-1 A (B, n), ascending, as those of the symmetric L^-1 A L^-T (M = L L^T)."""
    half = torch.linalg.solve_triangular(chol, matrix, upper=False)
    sym = torch.linalg.solve_triangular(chol, half.transpose(-1, -2), upper=False)
    return torch.linalg.eigvalsh(sym)


def _slowest_periods(chol, stiffness):
    """Each body's period (B,) s of its slowest mode of deformation, 2 pi / omega, omega^2 the least
    positive eigenvalue of M^-1 K (its rigid motions, on which K is zero, left out); 0 for a body with
    none (a rigid one)."""
    omega2 = _eigenvalues(chol, stiffness)
    floor = 1e-9 * omega2[:, -1:].clamp(min=1e-300)
    omega2 = torch.where(omega2 > floor, omega2, torch.inf).amin(-1)
    return 2 * math.pi / torch.sqrt(omega2)


def _pin_stiffness(stiffness, masses, jacobian):
    """K = k sum_p m_p J_p^T J_p (B, n, n): the pins' springs f_p = -k m_p (x_p - a_p) on the coordinates,
    from their masses (B, N) and Jacobians (B, N, 3, n)."""
    return torch.einsum("bp,bpin,bpim->bnm", stiffness * masses, jacobian, jacobian)


def _flat_over(points, normals, center):
    """Whether a body's touching points (``points`` (P, 3), their surfaces' normals ``normals`` pushing
    it) hold it flat: on one surface, each normal within acos(FLAT_NORMALS) of their mean n, and its
    centre of mass (``center`` (3,)) over their hull, its projection along n inside the hull of theirs
    with FLAT_MARGIN of the hull's size to spare; and n. Fewer than three points, or all on a line (an
    edge, a corner): not flat."""
    n = normals.sum(0)
    n = n / n.norm().clamp(min=1e-300)
    if len(points) < 3 or float((normals @ n).min()) < FLAT_NORMALS:
        return False, n
    plane = _plane_axes(n[None])[0].T.numpy()  # (3, 2)
    flat_points, middle = points.numpy() @ plane, center.numpy() @ plane
    try:
        hull = ConvexHull(flat_points)
    except QhullError:  # on a line: an edge or a corner
        return False, n
    margin = FLAT_MARGIN * float(np.ptp(flat_points, axis=0).max())
    # the hull's facets, e . (x, 1) <= 0 inside with e[:2] a unit normal: inside by the margin
    return bool((hull.equations[:, :2] @ middle + hull.equations[:, 2] <= -margin).all()), n


def _plane_axes(normal):
    """Two orthonormal axes (B, 2, 3) in the plane of each unit ``normal`` (B, 3)."""
    axis = torch.where(normal[:, :1].abs() < 0.9, normal.new_tensor([1.0, 0.0, 0.0]), normal.new_tensor([0.0, 1.0, 0.0]))
    u = torch.linalg.cross(normal, axis)
    u = u / u.norm(dim=-1, keepdim=True).clamp(min=1e-300)
    return torch.stack([u, torch.linalg.cross(normal, u)], 1)


def _impact_ends(pressed, near, rise):
    """Whether an impact is over: no point pressed at the step's end, and none within RETOUCH of the
    surface while the bodies still close (``rise`` < 0, the speed apart along the impact's normal)."""
    return ~pressed & ~((rise < 0) & near)


def _allowed(restitution, incoming):
    """e v_in, the speed an impact may leave with; any where e is inf (a body without the law)."""
    return torch.where(torch.isinf(restitution), torch.inf, restitution * incoming.nan_to_num())


@dataclass
class _Pairs:
    """The contact pairs of an implicit step (LagrangianSystem._newton): rows n^T J (B, P, n) and
    (1 - n n^T) J (B, P, 3, n), start depth d_0 (B, P), the surface's normal (B, P) and tangential
    (B, P, 3) velocity, spring and dashpot coefficients and mu N (B, P); tensors, or their NumPy
    arrays in ``_contact_newton``."""

    along: torch.Tensor | np.ndarray
    slide: torch.Tensor | np.ndarray
    depth: torch.Tensor | np.ndarray
    surface: torch.Tensor | np.ndarray
    drift: torch.Tensor | np.ndarray
    spring: torch.Tensor | np.ndarray
    dashpot: torch.Tensor | np.ndarray
    grip: torch.Tensor | np.ndarray
    ending: torch.Tensor | np.ndarray  # (B, P) 1 where the step does not resolve the spring (backward Euler), else 0


def _positive_part(matrix):
    """The symmetric matrices (B, n, n) with their negative eigenvalues set to zero; NaN for one that is
    not finite (a diverged state, which the rollout reports with its frame; eigh would raise)."""
    finite = torch.isfinite(matrix).all(-1).all(-1)[:, None, None]
    values, vectors = torch.linalg.eigh(torch.where(finite, matrix, 0.0))
    return torch.where(finite, (vectors * values.clamp(min=0.0)[:, None, :]) @ vectors.transpose(1, 2), torch.nan)


def _fitted_weight(x):
    """w(x) = (e^-x - 1 + x) / (x (1 - e^-x)), the end's weight at which a theta step decays a rate
    by exactly e^-x (B,); its series 1/2 + x / 12 below 1e-4."""
    small = x < 1e-4
    safe = torch.where(small, 1.0, x)
    fitted = (torch.exp(-safe) - 1 + safe) / (safe * -torch.expm1(-safe))
    return torch.where(small, 0.5 + x / 12, fitted)


@np.errstate(invalid="ignore", over="ignore", divide="ignore")  # a diverged state's NaN: the rollout reports it
def _contact_newton(base, rhs, change, q_dot, pairs: _Pairs, h: float, eps: float, rolling):
    """LagrangianSystem._newton on NumPy arrays (float64): dv, (push, the normal force's other part,
    friction) per pair and the dissipative generalized force. ``rolling`` (B, n, n) or None: the
    rolling resistance's damping per newton of normal force."""
    b, count, n = pairs.along.shape
    along, slide = pairs.along, pairs.slide.reshape(b, 3 * count, n)
    drift = pairs.drift.reshape(b, 3 * count)
    rubs = bool((pairs.grip > 0).any())
    apply = lambda rows, v: (rows @ v[..., None])[..., 0]  # (B, R, n) (B, n) -> (B, R)

    def outer(w, rows):  # sum_p w_p a_p a_p^T; a scene's rows span every body's coordinates and
        if rows[0].size > 16384:  # most of its pairs are far from any surface: the acting ones only
            acting = (w != 0).any(0)
            w, rows = w[:, acting], rows[:, acting]
        return (rows * w[..., None]).transpose(0, 2, 1) @ rows

    def forces_at(change, held=None):
        """The pairs' forces at dv: (push, the normal force's other part, friction, the dissipative
        generalized force, the spring's slope, the weights (on, holds, friction's)), the weights
        taken at dv or ``held``."""
        velocity = q_dot + change
        ended = pairs.depth - h * (apply(along, q_dot + 0.5 * change) - pairs.surface)
        pushing, stiffening = _discrete_spring(pairs.spring, pairs.depth, ended)
        # where the step does not resolve the spring, it acts at the step's end: k d_1+, the excess over
        # the discrete gradient booked with the dissipative part
        excess = pairs.ending * (pairs.spring * np.maximum(ended, 0.0) - pushing)
        stiffening = stiffening + pairs.ending * (pairs.spring * (ended > 0) - stiffening)
        normal_speed = apply(along, velocity) - pairs.surface
        on = (ended > 0).astype(q_dot.dtype) if held is None else held[0]
        damped = pairs.dashpot * on
        holds = ((pushing + excess - damped * normal_speed) > 0).astype(q_dot.dtype) if held is None else held[1]
        resist = np.where(holds > 0, excess - damped * normal_speed, -pushing)  # the normal force never pulls:
        resisting = (resist[:, None] @ along)[:, 0]  # where it would, none acts
        friction, rubbing = np.zeros((b, count, 3)), None
        if rubs:  # f_t = -mu N t / s, s = sqrt(|t|^2 + eps^2), t the slip
            slip = apply(slide, velocity) - drift
            if held is None:
                speed = np.sqrt((slip.reshape(b, count, 3) ** 2).sum(-1) + eps**2)
                rubbing = np.repeat(pairs.grip * on / speed, 3, axis=1)
            else:
                rubbing = held[2]
            friction = -(rubbing * slip).reshape(b, count, 3)
            resisting = resisting + (friction.reshape(b, 1, -1) @ slide)[:, 0]
        if rolling is not None:
            pressing = np.clip(pushing + resist, 0.0, None).sum(-1)  # N (B,)
            resisting = resisting - pressing[:, None] * apply(rolling, velocity)
        return pushing, resist, friction, resisting, stiffening, (on, holds, rubbing)

    going = np.ones((b, 1), dtype=bool)  # each body stops on its own, as it would alone
    tolerance = FRICTION_TOLERANCE if rubs else NEWTON_TOLERANCE  # friction's reweighting converges linearly
    for _ in range(NEWTON_ITERATIONS):
        pushing, resist, friction, resisting, stiffening, held = forces_at(change)
        on, holds, rubbing = held
        tangent = base + h * outer(holds * (0.5 * h * stiffening + pairs.dashpot * on), along)
        if rubs:  # friction's weight held in the tangent, reweighted at each iterate (IRLS)
            tangent = tangent + h * outer(rubbing, slide)
        if rolling is not None:
            tangent = tangent + h * np.clip(pushing + resist, 0.0, None).sum(-1)[:, None, None] * rolling
        residual = apply(base, change) - rhs - h * ((pushing[:, None] @ along)[:, 0] + resisting)
        correction = np.where(going, _solve_regularized(tangent, residual), 0.0)
        change = change - correction
        scale = tolerance * np.maximum(np.abs(change).max(-1, keepdims=True), 1e-300)
        going = going & (np.abs(correction) > scale).any(-1, keepdims=True)
        if not going.any():
            break
    # the forces the last solve took, at the dv it gave, so that the books hold what was applied
    pushing, resist, friction, resisting = forces_at(change, held)[:4]
    return change, (pushing, resist, friction), resisting


def _solve_regularized(matrix, rhs):
    """LagrangianSystem.solve on NumPy arrays (B, n, n), (B, n), by LAPACK's Cholesky factor and its
    two triangular solves: NaN for a body whose matrix is not positive definite."""
    n = matrix.shape[-1]
    scale = np.trace(matrix, axis1=-2, axis2=-1) / n
    regularized = matrix + MASS_REGULARIZATION * scale[:, None, None] * np.eye(n)
    solution = np.full(rhs.shape, np.nan)
    for body in range(len(matrix)):
        factor, info = dpotrf(regularized[body], lower=1, clean=0)
        if info == 0:
            solution[body] = dpotrs(factor, rhs[body], lower=1)[0]
    return solution


def _discrete_spring(k, d0, d1):
    """The discrete gradient of a one-sided spring's energy 1/2 k d+^2 between depths d0 and d1 (B, P),
    g = k (d1+^2 - d0+^2) / (2 (d1 - d0)), so that g (d1 - d0) is the energy's change: k (d0 + d1) / 2
    while both ends are compressed, 0 while neither is. Returns g and dg/dd1 (NumPy arrays)."""
    p0, p1 = np.maximum(d0, 0.0), np.maximum(d1, 0.0)
    both, either = (d0 > 0) & (d1 > 0), (d0 > 0) | (d1 > 0)
    gap = np.where(both | ~either, 1.0, d1 - d0)  # one end compressed: d1 - d0 is not 0
    crossing = k * (p1 * p1 - p0 * p0) / (2 * gap)
    slope = k * (2 * p1 * gap - (p1 * p1 - p0 * p0)) / (2 * gap * gap)
    force = np.where(both, 0.5 * k * (p0 + p1), np.where(either, crossing, 0.0))
    return force, np.where(both, 0.5 * k, np.where(either, slope, 0.0))


def _jt(jacobian, f):
    """J^T f summed over points: (B, P, 3, n), (B, P, 3) -> (B, n)."""
    return (f.flatten(1)[:, None] @ jacobian.flatten(1, 2))[:, 0]


def _per_body(value, batch, dtype):
    t = torch.as_tensor(value, dtype=dtype)
    return t.expand(batch).clone() if t.ndim == 0 else t
