"""Articulated objects in MuJoCo (reduced coordinates: joints hold exactly, bit-exact on the CPU).

Parts are rigid mesh geoms (exact inertia of the mesh, not of its hull) whose density gives the
object the requested total mass. They collide with the ground plane only, not with each other:
joint limits keep hinged neighbours from swinging far, but parts can still pass into one another
(measured up to centimetres in random assemblies). Conditions use the solver's own ``Conditions``,
so the reference and the solver run on identical input.
"""

from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

import mujoco
import numpy as np

from neurok_blender.core import Conditions
from training.shapes.articulated import ArticulatedObject
from training.shapes.geometry import enclosed_volume

from .friction import FRICTION_CONE
from .stability import refuse_instability

TIMESTEP = 0.001  # s, the largest step; each frame takes a whole number of steps
CONTACT = 'solref="0.004 1"'  # contact time constant 4 ms (>= 2 steps), critically damped: ~1 mm sag
IK_ITERATIONS, IK_DAMPING, ANCHOR_WEIGHT = 60, 1e-3, 100.0  # the pulled pose's inverse kinematics


@dataclass(frozen=True)
class ArticulatedMaterial:
    """Joint behaviour and ground friction. Damping and stiffness act in every hinge and slide."""

    joint_damping: float = 0.02  # N m s / rad (hinge) or N s / m (slide)
    joint_stiffness: float = 0.0  # N m / rad: a spring back to the rest pose
    friction: float = 0.5


@dataclass
class ArticulatedRun:
    positions: np.ndarray  # (frames, V, 3) float32, world
    part_ids: np.ndarray  # (V,)
    joint_angles: np.ndarray  # (frames, joints) rad or m, relative to rest
    energy: np.ndarray  # (frames,) kinetic + gravity potential + joint springs, J
    pivot_gap: float  # largest distance between a joint's anchor seen from parent and child, m
    warnings: int  # MuJoCo's warning count
    hold_gap: float = 0.0  # pull only: how far the handle stayed from its target (joints limit its reach), m


def simulate_articulated(obj: ArticulatedObject, material: ArticulatedMaterial | None = None,
                         conditions: Conditions | None = None) -> ArticulatedRun:
    """Run ``obj`` from its rest pose under ``conditions`` and return every vertex per frame."""
    material = material or ArticulatedMaterial()
    conditions = conditions or Conditions()
    vertices, _, part_ids = obj.mesh()
    conditions.check(len(vertices))
    origins = np.array([v.mean(0) for v, _ in obj.parts])
    model = mujoco.MjModel.from_xml_string(model_xml(obj, origins, material, conditions))
    model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)

    body_of_part = np.array([model.body(f"part{i}").id for i in range(len(obj.parts))])
    hold_gap = _hold(model, data, conditions, vertices, part_ids, origins, body_of_part)
    _set_initial_velocity(model, data, body_of_part[0], origins[0], conditions)
    loads = _loads(conditions, vertices, part_ids, origins)
    steps = int(np.ceil(1.0 / (conditions.fps * _stable_step(model, data))))
    model.opt.timestep = 1.0 / (conditions.fps * steps)
    mujoco.mj_forward(model, data)

    local = vertices - origins[part_ids]
    joint_ids = [model.joint(f"joint{j}").id for j, joint in enumerate(obj.joints) if joint.kind != "fixed"]
    qpos_index = [model.jnt_qposadr[j] for j in joint_ids]
    frames, angles, energy, gap = [], [], [], 0.0
    for frame in range(conditions.frames):
        if frame:
            for _ in range(steps):
                _apply_loads(data, body_of_part, loads, (frame - 0.5) / conditions.fps)
                mujoco.mj_step(model, data)
            refuse_instability(data, frame)
        rot = data.xmat[body_of_part].reshape(-1, 3, 3)
        frames.append(np.einsum("vij,vj->vi", rot[part_ids], local) + data.xpos[body_of_part][part_ids])
        angles.append(data.qpos[qpos_index].copy())
        energy.append(data.energy.sum())
        gap = max(gap, _pivot_gap(obj, data, body_of_part, origins))
    positions = np.asarray(frames, dtype=np.float32)
    if not np.isfinite(positions).all():
        raise RuntimeError(f"MuJoCo produced non-finite positions for {obj.name}")
    return ArticulatedRun(positions, part_ids, np.asarray(angles), np.asarray(energy), gap,
                          int(sum(w.number for w in data.warning)), hold_gap)


def _stable_step(model, data) -> float:
    """TIMESTEP, or less where joint damping would outrun RK4: damping alone decays the velocities at
    the eigenvalues of M^-1 C, and RK4 is stable for dt lambda < 2.78; half of that is kept. (A slim
    folding-rule slat on a free-floating chain with strong damping blew up at 1 ms.)"""
    if not model.dof_damping.any():
        return TIMESTEP
    inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, inertia)
    fastest = np.linalg.eigvals(np.linalg.solve(inertia, np.diag(model.dof_damping))).real.max()
    return min(TIMESTEP, 1.39 / fastest)


def _grips(conditions, vertices, part_ids):
    """Pull: (handle part, handle point, anchor part), the anchor being the part farthest from the handle."""
    handle = np.asarray(conditions.pull.vertices)
    part = int(np.bincount(part_ids[handle]).argmax())
    point = vertices[handle].mean(0)
    others = part_ids != part
    if not others.any():
        raise ValueError("pull: a single rigid part cannot bend; pull an object with joints")
    far = np.flatnonzero(others)[np.argmax(np.linalg.norm(vertices[others] - point, axis=1))]
    return part, point, int(part_ids[far])


def _hold(model, data, conditions, vertices, part_ids, origins, bodies) -> float:
    """The pulled pose (``hold.py``), found by inverse kinematics since joints are the only give:

        dq = argmin |J_h dq + r_h|^2 + w |J_a dq + r_a|^2 + lambda |dq|^2      (damped Gauss-Newton)

    with r_h the handle point's distance from its target and r_a that of three points of the anchor
    part from their rest places; joint limits clamp. A point on a hinged lid moves on a circle, so the
    target may be out of reach: the pose gets as close as the joints allow. Returns the remaining
    distance of the handle from its target, m."""
    if conditions.pull is None:
        return 0.0
    part, point, anchor_part = _grips(conditions, vertices, part_ids)
    target = point + np.asarray(conditions.pull.displacement, dtype=np.float64)
    size = np.ptp(vertices, axis=0).max()
    grips = [(bodies[part], point - origins[part], target, 1.0)] + [
        (bodies[anchor_part], offset, origins[anchor_part] + offset, ANCHOR_WEIGHT)
        for offset in np.vstack([np.zeros(3), 0.5 * size * np.eye(3)[:2]])]
    jacobian = np.zeros((3, model.nv))
    for _ in range(IK_ITERATIONS):
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        normal, gradient = IK_DAMPING * size**2 * np.eye(model.nv), np.zeros(model.nv)
        for body, local, goal, weight in grips:
            at = data.xpos[body] + data.xmat[body].reshape(3, 3) @ local
            mujoco.mj_jac(model, data, jacobian, None, at, body)
            normal += weight * jacobian.T @ jacobian
            gradient += weight * jacobian.T @ (at - goal)
        step = -np.linalg.solve(normal, gradient)
        mujoco.mj_integratePos(model, data.qpos, step, 1.0)
        limited = model.jnt_limited.astype(bool)
        address = model.jnt_qposadr[limited]
        data.qpos[address] = np.clip(data.qpos[address], *model.jnt_range[limited].T)
    data.qvel[:] = 0.0
    mujoco.mj_forward(model, data)
    return float(np.linalg.norm(data.xpos[bodies[part]] + data.xmat[bodies[part]].reshape(3, 3) @ grips[0][1] - target))


def model_xml(obj: ArticulatedObject, origins, material, conditions) -> str:
    """MJCF with one body per part, nested along the joint tree, mesh geoms at the world rest pose."""
    volume = sum(enclosed_volume(v, f) for v, f in obj.parts)
    density = conditions.mass / volume
    children = {i: [] for i in range(len(obj.parts))}
    for j, joint in enumerate(obj.joints):
        children[joint.parent].append((j, joint))
    assets = "".join(
        f'<mesh name="mesh{i}" inertia="exact" vertex={quoteattr(_numbers(v - origins[i]))} '
        f'face={quoteattr(_numbers(f))}/>'
        for i, (v, f) in enumerate(obj.parts))

    def body(i, parent_origin, joint_xml):
        inner = "".join(body(joint.child, origins[i], _joint_xml(j, joint, origins[joint.child], material))
                        for j, joint in children[i])
        return (f'<body name="part{i}" pos="{_numbers(origins[i] - parent_origin)}">{joint_xml}'
                f'<geom type="mesh" mesh="mesh{i}" density="{density}" contype="1" conaffinity="0" {CONTACT} '
                f'friction="{material.friction} 0.005 0.0001"/>{inner}</body>')

    ground = ""
    if conditions.ground_height is not None:
        ground = (f'<geom type="plane" size="0 0 1" pos="0 0 {conditions.ground_height}" contype="0" '
                  f'conaffinity="1" {CONTACT} friction="{material.friction} 0.005 0.0001"/>')
    return (f'<mujoco><compiler angle="radian"/><option gravity="{_numbers(conditions.gravity)}" '
            f'integrator="RK4" {FRICTION_CONE}/><asset>{assets}</asset><worldbody>{ground}'
            f'{body(0, np.zeros(3), "<freejoint/>")}</worldbody></mujoco>')


def _joint_xml(j, joint, child_origin, material):
    if joint.kind == "fixed":
        return ""
    limits = "" if joint.limits is None else f' limited="true" range="{joint.limits[0]} {joint.limits[1]}" solreflimit="0.004 1"'
    return (f'<joint name="joint{j}" type="{joint.kind}" pos="{_numbers(joint.anchor - child_origin)}" '
            f'axis="{_numbers(joint.axis)}"{limits} damping="{material.joint_damping}" '
            f'stiffness="{material.joint_stiffness}" armature="1e-6"/>')


def _set_initial_velocity(model, data, root, root_origin, conditions):
    """Whole-object rigid motion: root origin velocity v + w x (origin - centre of mass), joints still."""
    com = data.subtree_com[root]
    omega = np.asarray(conditions.angular_velocity, dtype=np.float64)
    data.qvel[:] = 0.0
    data.qvel[0:3] = np.asarray(conditions.velocity) + np.cross(omega, data.xpos[root] - com)
    data.qvel[3:6] = data.xmat[root].reshape(3, 3).T @ omega  # a free joint's spin is in body axes


def _loads(conditions, vertices, part_ids, origins):
    """Each force as (part, point in part coordinates, vector, start s, end s), split over its points."""
    loads = []
    for force in conditions.forces:
        vector = force.share(vertices)
        for p in force.application_points(vertices):
            part = int(part_ids[np.argmin(np.linalg.norm(vertices - p, axis=1))])
            loads.append((part, p - origins[part], vector,
                          force.start_frame / conditions.fps, force.end_frame / conditions.fps))
    return loads


def _apply_loads(data, bodies, loads, t):
    """Forces on during the frame interval whose midpoint is t, at their points' current positions."""
    data.xfrc_applied[:] = 0.0
    for part, local, vector, start, end in loads:
        if start <= t < end:
            body = bodies[part]
            point = data.xpos[body] + data.xmat[body].reshape(3, 3) @ local
            data.xfrc_applied[body, :3] += vector
            data.xfrc_applied[body, 3:] += np.cross(point - data.xipos[body], vector)


def _pivot_gap(obj, data, bodies, origins):
    """How far a joint's anchor, carried by the parent and by the child, drifts apart (along a slide
    joint's axis it may move freely)."""
    gap = 0.0
    for joint in obj.joints:
        rotation = data.xmat[bodies[joint.parent]].reshape(3, 3)
        seen = [data.xpos[bodies[p]] + data.xmat[bodies[p]].reshape(3, 3) @ (joint.anchor - origins[p])
                for p in (joint.parent, joint.child)]
        apart = seen[0] - seen[1]
        if joint.kind == "slide":
            axis = rotation @ joint.axis
            apart = apart - (apart @ axis) * axis
        gap = max(gap, float(np.linalg.norm(apart)))
    return gap


def _numbers(array) -> str:
    return " ".join(f"{x:.9g}" for x in np.asarray(array).ravel())
