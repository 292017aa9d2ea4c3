"""Volumetric elastic bodies: linear-tetrahedral FEM in MuJoCo's flex, the surface carried along.

The closed surface is filled with tets (wildmeshing); MuJoCo's ``discrete`` integrator steps the
flex (MuJoCo 4.0 refuses implicit integration of flex elasticity, and Euler went unstable here at
1 ms); vertex masses are lumped from the tet volumes; every input vertex follows its tet by
barycentric embedding. Conditions are the solver's own ``Conditions``.

The discrete integrator takes the velocity update implicitly, which damps the rotation of a strained
body (a stiff body released spinning from a pull lost 93 % of its spin in the first frame), so every
step in free flight gives the lost angular momentum back as a rigid spin
(``_restore_angular_momentum``); in contact or under a load the loss stays (docs/benchmarks.md,
elastic fidelity).
"""

from dataclasses import dataclass

import mujoco
import numpy as np

from neurok_blender.core import Conditions
from neurok_blender.core.mesh import check_mesh, is_closed
from training.shapes.tetra import embed, tet_volumes, tetrahedralize

from .friction import FRICTION_CONE
from .hold import RAMP, STILL, anchor, damping_factor, hold_steps, ramp
from .stability import refuse_instability

TIMESTEP = 0.001
RADIUS = 0.002  # m: contact skin of the flex vertices
CONTACT = 'solref="0.004 1"'  # contact time constant 4 ms, critically damped (MuJoCo's 20 ms default sagged 2 cm)


@dataclass(frozen=True)
class ElasticMaterial:
    young: float = 5e4  # Pa
    poisson: float = 0.35
    damping: float = 0.002  # MuJoCo flex elasticity damping (stiffness-proportional, s)
    friction: float = 0.5


@dataclass
class ElasticRun:
    positions: np.ndarray  # (frames, V, 3) float32, the input vertices, world
    volume_ratio: np.ndarray  # (frames,) tet volume over rest volume
    center: np.ndarray  # (frames, 3) centre of mass of the tet nodes
    angular_momentum: np.ndarray  # (frames, 3) of the tet nodes about their centre of mass, kg m^2/s
    warnings: int  # MuJoCo's warning count (e.g. an under-converged flex solve)
    hold_speed: float = 0.0  # pull only: the largest node speed left when the hold let go, m/s


def simulate_elastic(vertices, faces, material: ElasticMaterial | None = None,
                     conditions: Conditions | None = None, tets=None) -> ElasticRun:
    """Simulate a closed surface as an elastic solid; ``tets`` = (points, tets) skips tetrahedralizing."""
    material = material or ElasticMaterial()
    conditions = conditions or Conditions()
    vertices, faces = check_mesh(vertices, faces)
    conditions.check(len(vertices))
    if not is_closed(faces):
        raise ValueError("an elastic body needs a closed surface (every edge shared by two triangles)")
    points, elements = tets if tets is not None else tetrahedralize(vertices, faces)
    volumes = tet_volumes(points, elements)
    lumped = np.zeros(len(points))
    np.add.at(lumped, elements.ravel(), np.repeat(volumes / 4, 4))
    masses = conditions.mass * lumped / lumped.sum()
    host, weights = embed(vertices, points, elements)

    model = mujoco.MjModel.from_xml_string(_model_xml(points, elements, material, conditions))
    bodies = model.flex_vertbodyid.copy()
    model.body_mass[bodies] = masses
    data = mujoco.MjData(model)
    mujoco.mj_setConst(model, data)  # recompute what the compiler derived from the masses
    steps = int(np.ceil(1.0 / (conditions.fps * TIMESTEP)))
    model.opt.timestep = 1.0 / (conditions.fps * steps)
    dofs = model.body_dofadr[bodies][:, None] + np.arange(3)
    mujoco.mj_forward(model, data)
    held = _hold(model, data, conditions, vertices, host, weights, elements, masses, bodies, dofs)
    current = data.flexvert_xpos.copy()
    center = (masses[:, None] * current).sum(0) / masses.sum()
    velocity = np.asarray(conditions.velocity) + np.cross(np.asarray(conditions.angular_velocity), current - center)
    data.qvel[dofs.ravel()] = velocity.ravel()
    mujoco.mj_forward(model, data)
    loads = _loads(conditions, vertices, host, weights, elements)

    frames, ratios, centers, momenta = [], [], [], []
    for frame in range(conditions.frames):
        if frame:
            t = (frame - 0.5) / conditions.fps
            data.xfrc_applied[:] = 0.0
            for node, share, vector, start, end in loads:
                if start <= t < end:
                    data.xfrc_applied[bodies[node], :3] += share * vector
            loaded = data.xfrc_applied.any()
            for _ in range(steps):
                momentum = _angular_momentum(model, data, masses, bodies, dofs)[1]
                mujoco.mj_step(model, data)
                if data.ncon == 0 and not loaded:  # free flight: no torque about the centre of mass
                    _restore_angular_momentum(model, data, masses, bodies, dofs, momentum)
            mujoco.mj_forward(model, data)  # after a discrete step the flex positions are one step old
            refuse_instability(data, frame)
        current = data.flexvert_xpos.copy()
        if not np.isfinite(current).all():
            raise RuntimeError(f"MuJoCo flex went non-finite before frame {frame}")
        frames.append(np.einsum("vk,vki->vi", weights, current[elements[host]]))
        ratios.append(tet_volumes(current, elements).sum() / volumes.sum())
        centers.append((masses[:, None] * current).sum(0) / masses.sum())
        momenta.append(_angular_momentum(model, data, masses, bodies, dofs)[1])
    return ElasticRun(np.asarray(frames, dtype=np.float32), np.asarray(ratios), np.asarray(centers),
                      np.asarray(momenta), int(sum(w.number for w in data.warning)), held)


def _hold(model, data, conditions, vertices, host, weights, elements, masses, bodies, dofs) -> float:
    """Hold the pulled shape (``hold.py``): the handle's tet nodes are moved by the displacement and
    the anchor nodes kept at rest (positions overwritten after every step), the rest damped still
    with gravity off. Returns the largest node speed left at release, m/s."""
    if conditions.pull is None:
        return 0.0
    handle = np.asarray(conditions.pull.vertices)
    moved = np.unique(elements[host[handle]])
    points = data.flexvert_xpos.copy()
    held = np.setdiff1d(anchor(points, vertices[handle]), moved)
    displacement = np.asarray(conditions.pull.displacement, dtype=np.float64)
    gravity = model.opt.gravity.copy()
    model.opt.gravity[:] = 0.0
    damping, dt = damping_factor(model.opt.timestep), model.opt.timestep
    rest = data.qpos[dofs].copy()  # (N, 3): each flex vertex's three slide joints
    for step in range(hold_steps(dt)):
        mujoco.mj_step(model, data)
        data.qvel[:] *= damping
        data.qpos[dofs[moved]] = rest[moved] + ramp((step + 1) * dt) * displacement
        data.qpos[dofs[held]] = rest[held]
        data.qvel[dofs[np.concatenate([moved, held])]] = 0.0
        if step * dt > RAMP and np.abs(data.qvel).max() < STILL:
            break
    speed = float(np.abs(data.qvel).max())
    data.qvel[:] = 0.0
    model.opt.gravity[:] = gravity
    mujoco.mj_forward(model, data)
    return speed


def _angular_momentum(model, data, masses, bodies, dofs):
    """The nodes' offsets r from their centre of mass, L = sum m r x v about it, and the inertia
    tensor I = sum m (|r|^2 1 - r r^T), from the state after the step (``qpos``: the flex positions
    lag one step behind a discrete step)."""
    offsets = model.body_pos[bodies] + data.qpos[dofs]
    offsets -= masses @ offsets / masses.sum()
    momentum = masses @ np.cross(offsets, data.qvel[dofs])
    inertia = (np.eye(3) * (masses @ (offsets * offsets).sum(1))
               - np.einsum("n,ni,nj->ij", masses, offsets, offsets))
    return offsets, momentum, inertia


def _restore_angular_momentum(model, data, masses, bodies, dofs, momentum):
    """Give back the spin the step took from a body in free flight, where nothing exerts a torque
    about its centre of mass (gravity is uniform): dL = I dw, added as the rigid velocity dw x r,
    which leaves the linear momentum and the deformation alone. The step lost it to the implicit
    velocity update in M + hD + h^2 K: a strained body's K no longer has the rigid rotations in its
    null space."""
    offsets, current, inertia = _angular_momentum(model, data, masses, bodies, dofs)
    spin = np.linalg.solve(inertia, momentum - current)
    data.qvel[dofs] += np.cross(spin, offsets)


def _model_xml(points, elements, material, conditions):
    numbers = " ".join(f"{x:.9g}" for x in points.ravel())
    element = " ".join(str(i) for i in elements.ravel())
    ground = ""
    if conditions.ground_height is not None:
        ground = (f'<geom type="plane" size="0 0 1" pos="0 0 {conditions.ground_height}" {CONTACT} '
                  f'friction="{material.friction} 0.005 0.0001"/>')
    gravity = " ".join(f"{g:.9g}" for g in conditions.gravity)
    return (f'<mujoco><option timestep="{TIMESTEP}" integrator="discrete" {FRICTION_CONE} gravity="{gravity}"/><worldbody>{ground}'
            f'<flexcomp name="body" type="direct" dim="3" point="{numbers}" element="{element}" radius="{RADIUS}" '
            f'mass="{conditions.mass}"><elasticity young="{material.young}" poisson="{material.poisson}" '
            f'damping="{material.damping}"/><contact condim="3" selfcollide="none" {CONTACT} '
            f'friction="{material.friction} 0.005 0.0001"/><edge equality="false"/></flexcomp>'
            f'</worldbody></mujoco>')


def _loads(conditions, vertices, host, weights, elements):
    """Each force split onto the four nodes of the tet holding its point, by barycentric weight."""
    loads = []
    for force in conditions.forces:
        vector = force.share(vertices)
        for p in force.application_points(vertices):
            nearest = int(np.argmin(np.linalg.norm(vertices - p, axis=1)))
            for node, share in zip(elements[host[nearest]], weights[nearest]):
                loads.append((int(node), float(share), vector, force.start_frame / conditions.fps,
                              force.end_frame / conditions.fps))
    return loads
