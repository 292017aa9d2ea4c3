"""Continuum bodies (jelly, snow, clay, sand): MLS-MPM in Taichi, the surface carried by its particles.

Snow and clay deform for good and sand flows into a pile, where a tet mesh would tangle; MPM keeps
the material as particles and does the mechanics on a background grid. Particles fill the closed
surface on a lattice; every step moves their mass and momentum to the grid (APIC, Hu et al. 2018
MLS-MPM), applies gravity, forces and the ground there, and moves the particles with the grid
velocity. The grid is rebuilt every step, so it follows the body: a throw never leaves the domain,
only the body's spread is bounded. Every input vertex rides on its nearest particles through their
deformation gradients. Taichi runs on one CPU thread: a run repeats bit for bit, in any process.
The kernels compile once per process: 6.5 s cold, 1 s from Taichi's cache on disk (~/.cache/taichi).
"""

import os
import warnings
from dataclasses import dataclass

import numpy as np

from neurok_blender.core import Conditions
from neurok_blender.core.mesh import check_mesh, is_closed, lattice_inside
from training.shapes.geometry import enclosed_volume

from .hold import RAMP, SETTLE_TIME, STILL, anchor, damping_factor, ramp

os.environ.setdefault("TI_SKIP_VERSION_CHECK", "ON")  # Taichi would phone home at every ti.init
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "False")
with warnings.catch_warnings():  # Taichi 1.7.4 calls locale.getdefaultlocale, deprecated in Python 3.11
    warnings.simplefilter("ignore", DeprecationWarning)
    import taichi as ti  # noqa: E402  (after the two switches above)

MODELS = ("jelly", "snow", "plasticine", "sand")
PARTICLES = 4000  # about; a step takes 3.5 ms of one CPU thread here (2 ms at 2000, 6.5 ms at 8000)
MAX_PARTICLES = 1 << 14
GRID = 128  # grid nodes per axis: the widest the body may spread, in cells
WAVE_COURANT = 0.5  # dt <= WAVE_COURANT dx / c_p, c_p the pressure-wave speed: all four held at 0.9, 1.2 blew up
FLOW_COURANT = 0.3  # dt <= FLOW_COURANT dx / |v|max: no particle crosses a third of a cell per step
HARDENING_LIMIT = 5.0  # snow's hardening factor is capped, so is its wave speed (and the step count)
NEIGHBOURS = 8  # particles carrying each surface vertex
FORCE_SHARE = 1 / 16  # the share of the particles, nearest a force's point, that carry it: a hand-sized patch
TINY_STRETCH = 1e-4  # singular values are kept above this before a logarithm


@dataclass(frozen=True)
class ContinuumMaterial:
    """Constitutive model and its parameters; the density is the conditions' mass over the enclosed volume.

    jelly: fixed corotated elasticity. snow: Stomakhin et al. 2013, the elastic stretches clamped to
    [1 - critical_compression, 1 + critical_stretch], the Lame parameters hardened by
    exp(hardening (1 - J_p)). plasticine: von Mises plasticity on the Hencky strain. sand:
    Drucker-Prager plasticity on the Hencky strain, cohesionless (Klar et al. 2016).
    """

    model: str = "snow"
    young: float = 1e5  # Pa
    poisson: float = 0.2
    critical_compression: float = 2.5e-2  # snow
    critical_stretch: float = 7.5e-3  # snow
    hardening: float = 10.0  # snow
    yield_stress: float = 2e3  # Pa, plasticine: the largest deviatoric Kirchhoff stress (Frobenius norm)
    friction_angle: float = 30.0  # degrees, sand
    friction: float = 0.5  # Coulomb friction with the ground


@dataclass
class ContinuumRun:
    positions: np.ndarray  # (frames, V, 3) float32, the input vertices, world
    particles: np.ndarray  # (frames, P, 3) float32, world
    volume_ratio: np.ndarray  # (frames,) mean det F over the particles: volume over rest volume
    spread: np.ndarray  # (frames,) RMS distance of the particles from their centre, over that at frame 0
    center: np.ndarray  # (frames, 3) centre of mass
    substeps: int  # MPM steps taken, the hold's included
    hold_speed: float = 0.0  # pull only: the largest particle speed left when the hold let go, m/s


def simulate_continuum(vertices, faces, material: ContinuumMaterial | None = None,
                       conditions: Conditions | None = None, particles: int = PARTICLES) -> ContinuumRun:
    """Simulate a closed surface filled with about ``particles`` MPM particles of ``material``.

    The ground (if any) takes the normal velocity and rubs with Coulomb friction; contact is
    inelastic, so ``conditions.restitution`` and ``drag`` play no part.
    """
    material = material or ContinuumMaterial()
    conditions = conditions or Conditions()
    vertices, faces = check_mesh(vertices, faces)
    conditions.check(len(vertices))
    if not is_closed(faces):
        raise ValueError("a continuum body needs a closed surface (every edge shared by two triangles)")
    if material.model not in MODELS:
        raise ValueError(f"unknown continuum model {material.model!r}; choose one of {', '.join(MODELS)}")
    volume = enclosed_volume(vertices, faces)
    spacing = (volume / particles) ** (1 / 3)
    ground = 0.0 if conditions.ground_height is None else conditions.ground_height
    node_zero = np.array([0.0, 0.0, ground])  # a grid node, on the ground plane
    rest = _fill(vertices, faces, spacing, node_zero)
    if not 0 < len(rest) <= MAX_PARTICLES:
        raise ValueError(f"{len(rest)} particles fill the surface; the engine takes 1 to {MAX_PARTICLES}")
    run = _Run(_engine(), material, conditions, rest, volume, 2 * spacing, node_zero)
    neighbours, weights, offsets = _embedding(vertices, rest, spacing)

    held = 0.0
    if conditions.pull is not None:
        handle = np.asarray(conditions.pull.vertices)
        held = run.hold(np.unique(neighbours[handle]), anchor(rest, vertices[handle]), conditions.pull.displacement)
    run.release()
    loads = run.loads(vertices)
    frames, clouds, ratios, centers = [], [], [], []
    for frame in range(conditions.frames):
        if frame:
            t = (frame - 0.5) / conditions.fps  # a force is on for the frame intervals whose midpoint it covers
            run.set_forces(sum((f for f, start, end in loads if start <= t < end), np.zeros((len(rest), 3))))
            run.advance(1.0 / conditions.fps, f"frame {frame}")
        x, deformation = run.state()
        if not (np.isfinite(x).all() and np.isfinite(deformation).all()):
            raise RuntimeError(f"MPM went non-finite at frame {frame}")
        # x_v = sum_k w_k (x_k + F_k (X_v - X_k)): each neighbour's first-order guess, weighted
        carried = x[neighbours] + np.einsum("vkij,vkj->vki", deformation[neighbours], offsets)
        frames.append(np.einsum("vk,vki->vi", weights, carried))
        clouds.append(x)
        ratios.append(np.linalg.det(deformation).mean())
        centers.append(x.mean(0))
    clouds = np.asarray(clouds)
    radius = np.sqrt(((clouds - np.asarray(centers)[:, None]) ** 2).sum(-1).mean(-1))
    return ContinuumRun(np.asarray(frames, dtype=np.float32), clouds.astype(np.float32), np.asarray(ratios),
                        radius / radius[0], np.asarray(centers), run.substeps, held)


def _fill(vertices, faces, spacing, node_zero):
    """Lattice points node_zero + (j + 1/2) spacing inside the surface: a quarter cell off the grid nodes."""
    low = np.floor((vertices.min(0) - node_zero) / spacing).astype(int)
    high = np.ceil((vertices.max(0) - node_zero) / spacing).astype(int)
    return lattice_inside(vertices, faces, *(node_zero[d] + (np.arange(low[d], high[d]) + 0.5) * spacing for d in range(3)))


def _embedding(vertices, rest, spacing):
    """Each vertex's NEIGHBOURS nearest particles, weights 1 / (d^2 + (spacing/2)^2) normalized, and offsets."""
    nearest = [np.argpartition(np.linalg.norm(chunk[:, None, :] - rest[None], axis=-1), NEIGHBOURS, axis=1)
               for chunk in np.array_split(vertices, max(1, len(vertices) // 128))]
    neighbours = np.concatenate(nearest)[:, :NEIGHBOURS]
    near = np.linalg.norm(vertices[:, None, :] - rest[neighbours], axis=-1)
    weights = 1.0 / (near**2 + (spacing / 2) ** 2)
    return neighbours, weights / weights.sum(1, keepdims=True), vertices[:, None, :] - rest[neighbours]


class _Run:
    """One simulation's state on the shared engine: particle layout, material constants, time stepping."""

    def __init__(self, engine, material, conditions, rest, volume, dx, node_zero):
        self.engine, self.material, self.conditions = engine, material, conditions
        self.count, self.dx, self.node_zero = len(rest), dx, node_zero
        self.mass, self.volume = conditions.mass / len(rest), volume / len(rest)  # per particle
        mu = material.young / (2 * (1 + material.poisson))
        lam = material.young * material.poisson / ((1 + material.poisson) * (1 - 2 * material.poisson))
        self.lame = (mu, lam)
        # pressure waves travel at c_p = sqrt(h (lambda + 2 mu) / rho), h the stiffest particle's hardening
        # (snow; 1 otherwise); explicit MPM must not outrun them
        self.wave_speed = np.sqrt((lam + 2 * mu) * self.volume / self.mass)
        self.hardened = 1.0
        sin = np.sin(np.radians(material.friction_angle))
        self.cone = np.sqrt(2 / 3) * 2 * sin / (3 - sin)  # Drucker-Prager alpha (Klar et al. 2016, eq. 27)
        self.substeps, self.speed = 0, 0.0
        self.low, self.high = rest.min(0), rest.max(0)
        self.forces = np.zeros((MAX_PARTICLES, 3), dtype=np.float32)
        engine.reset(self.count, _padded(rest))

    def state(self):
        """Particle positions (P, 3) and total deformation gradients (P, 3, 3), float64."""
        return (self.engine.x.to_numpy()[:self.count].astype(np.float64),
                self.engine.deformation.to_numpy()[:self.count].astype(np.float64))

    def set_forces(self, forces):
        self.forces[:self.count] = forces
        self.engine.force.from_numpy(self.forces)

    def loads(self, vertices):
        """Per force: (forces (P, 3) spread over the particles nearest each point, start s, end s)."""
        x, _ = self.state()
        carriers = max(1, round(FORCE_SHARE * self.count))
        loads = []
        for force in self.conditions.forces:
            field = np.zeros((self.count, 3))
            for p in force.application_points(vertices):
                nearest = np.argsort(np.linalg.norm(x - p, axis=1), kind="stable")[:carriers]
                field[nearest] += force.share(vertices) / len(nearest)
            loads.append((field, force.start_frame / self.conditions.fps, force.end_frame / self.conditions.fps))
        return loads

    def advance(self, duration, when):
        """Steps of equal length through ``duration``, each within both Courant limits."""
        left = duration
        while left > 0:
            steps = int(np.ceil(left / self.step_limit()))
            dt = left / steps
            self.step(dt, when)
            left = 0.0 if steps == 1 else left - dt

    def step_limit(self):
        wave = WAVE_COURANT * self.dx / (self.wave_speed * np.sqrt(self.hardened))
        return min(wave, FLOW_COURANT * self.dx / max(self.speed, 1e-9))

    def step(self, dt, when, gravity=None, keep=1.0, handle_velocity=(0.0, 0.0, 0.0)):
        low = np.floor((self.low - self.node_zero) / self.dx).astype(int) - 1  # grid index of the box's first node
        size = np.floor((self.high - self.node_zero) / self.dx).astype(int) - low + 3  # the stencil's reach
        if size.max() > GRID:
            raise RuntimeError(f"the body spread over {size.max()} cells at {when}; the grid spans {GRID}")
        origin = self.node_zero + low * self.dx
        material, engine, (mu, lam) = self.material, self.engine, self.lame
        gravity = self.conditions.gravity if gravity is None else gravity
        ground = self.conditions.ground_height is not None
        engine.to_grid(self.count, dt, self.dx, origin, size, self.mass, self.volume)
        engine.grid_step(size, low, dt, np.asarray(gravity), keep, ground, material.friction,
                         np.asarray(handle_velocity))
        stats = engine.to_particles(
            self.count, dt, self.dx, origin, MODELS.index(material.model), mu, lam, material.hardening,
            material.critical_compression, material.critical_stretch, material.yield_stress, self.cone, ground,
            self.node_zero[2])
        self.substeps += 1
        if stats[7] > 0 or not np.isfinite(stats).all():
            raise RuntimeError(f"MPM went non-finite at {when}")
        self.low, self.high, self.speed, self.hardened = stats[:3], stats[3:6], float(stats[6]), float(stats[8])

    def hold(self, handle, held, displacement) -> float:
        """Pull and release (``hold.py``): the grid nodes under the ``handle`` particles move the
        displacement in (ramped), those under the ``held`` ones stay still, gravity off, everything
        damped, until still or SETTLE_TIME. Returns the largest particle speed left, m/s."""
        grips = np.zeros(MAX_PARTICLES, dtype=np.int32)
        grips[held], grips[handle] = HELD, HANDLE  # a particle in both is a handle
        self.engine.grip.from_numpy(grips)
        displacement = np.asarray(displacement, dtype=np.float64)
        t = 0.0
        while t < SETTLE_TIME and not (t > RAMP and self.speed < STILL):
            dt = self.step_limit()
            # the handle's nodes move exactly ramp(t + dt) - ramp(t) of the displacement this step
            velocity = (ramp(t + dt) - ramp(t)) / dt * displacement
            self.step(dt, "the hold before frame 0", (0.0, 0.0, 0.0), damping_factor(dt), velocity)
            t += dt
        self.engine.grip.fill(FREE)
        return self.speed

    def release(self):
        """Frame 0's motion: v = v0 + w x (x - c) and its velocity gradient C = [w]x, from rest."""
        x, _ = self.state()
        omega = np.asarray(self.conditions.angular_velocity, dtype=np.float64)
        velocity = np.asarray(self.conditions.velocity) + np.cross(omega, x - x.mean(0))
        spin = np.cross(omega, np.eye(3)).T  # [w]x: column j is w x e_j
        self.engine.v.from_numpy(_padded(velocity))
        self.engine.C.from_numpy(np.broadcast_to(spin, (MAX_PARTICLES, 3, 3)).astype(np.float32))
        self.speed = float(np.linalg.norm(velocity, axis=1).max())


def _padded(rows):
    out = np.zeros((MAX_PARTICLES, 3), dtype=np.float32)
    out[:len(rows)] = rows
    return out


_ENGINE = None


def _engine():
    """The process's one engine: Taichi is initialized and its kernels compiled once, then reused."""
    global _ENGINE
    if _ENGINE is None:
        ti.init(arch=ti.cpu, cpu_max_num_threads=1, default_fp=ti.f32, log_level=ti.WARN)
        _ENGINE = _Engine()
    return _ENGINE


JELLY, SNOW, PLASTICINE, SAND = range(4)  # MODELS in order, as the kernels see them
FREE, HELD, HANDLE = range(3)  # a particle's grip during a pull's hold, passed on to its grid nodes
vec3, ivec3 = ti.types.vector(3, ti.f32), ti.types.vector(3, ti.i32)


@ti.func
def _diagonal(d):
    return ti.Matrix([[d[0], 0.0, 0.0], [0.0, d[1], 0.0], [0.0, 0.0, d[2]]])


@ti.data_oriented
class _Engine:
    """Fixed-size particle and grid fields; each run uses the first ``count`` particles and a box of the grid.

    Quadratic B-spline weights over the 3x3x3 nodes around each particle, in cell units
    fx = x / dx - base:  w0 = (1.5 - fx)^2 / 2,  w1 = 3/4 - (fx - 1)^2,  w2 = (fx - 1/2)^2 / 2.
    """

    def __init__(self):
        self.x = ti.Vector.field(3, ti.f32, MAX_PARTICLES)
        self.v = ti.Vector.field(3, ti.f32, MAX_PARTICLES)
        self.C = ti.Matrix.field(3, 3, ti.f32, MAX_PARTICLES)  # APIC velocity gradient
        self.deformation = ti.Matrix.field(3, 3, ti.f32, MAX_PARTICLES)  # total F, for the surface and volume
        self.elastic = ti.Matrix.field(3, 3, ti.f32, MAX_PARTICLES)  # F_E, after plasticity
        self.plastic_volume = ti.field(ti.f32, MAX_PARTICLES)  # J_P (snow hardening)
        self.stress = ti.Matrix.field(3, 3, ti.f32, MAX_PARTICLES)  # Kirchhoff stress of F_E
        self.force = ti.Vector.field(3, ti.f32, MAX_PARTICLES)  # external, N
        self.grip = ti.field(ti.i32, MAX_PARTICLES)
        self.momentum = ti.Vector.field(3, ti.f32, (GRID, GRID, GRID))  # then the node velocity; 42 MB all three
        self.node_mass = ti.field(ti.f32, (GRID, GRID, GRID))
        self.node_grip = ti.field(ti.i32, (GRID, GRID, GRID))  # the strongest grip among its particles
        self.stats = ti.field(ti.f32, 9)  # lowest x y z, highest x y z, fastest speed, non-finite count, hardest h

    @ti.kernel
    def reset(self, count: ti.i32, rest: ti.types.ndarray(dtype=vec3, ndim=1)):
        for p in range(count):
            self.x[p] = rest[p]
            self.v[p] = ti.Vector.zero(ti.f32, 3)
            self.C[p] = ti.Matrix.zero(ti.f32, 3, 3)
            self.deformation[p] = ti.Matrix.identity(ti.f32, 3)
            self.elastic[p] = ti.Matrix.identity(ti.f32, 3)
            self.plastic_volume[p] = 1.0
            self.stress[p] = ti.Matrix.zero(ti.f32, 3, 3)
            self.force[p] = ti.Vector.zero(ti.f32, 3)
            self.grip[p] = FREE

    @ti.func
    def weights(self, x, origin, dx):
        cell = (x - origin) / dx
        base = ti.cast(cell - 0.5, ti.i32)
        fx = cell - base
        return base, fx, ti.Matrix.rows([0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2])

    @ti.kernel
    def to_grid(self, count: ti.i32, dt: ti.f32, dx: ti.f32, origin: vec3, size: ivec3, mass: ti.f32,
                volume: ti.f32):
        """Particle to grid (MLS-MPM): node momentum += w (m v + dt f + (m C - dt V 4/dx^2 tau)(x_i - x_p))."""
        for i, j, k in ti.ndrange(size[0], size[1], size[2]):
            self.momentum[i, j, k] = ti.Vector.zero(ti.f32, 3)
            self.node_mass[i, j, k] = 0.0
            self.node_grip[i, j, k] = FREE
        ti.loop_config(serialize=True)  # in order, with plain adds: float atomics made this 9x slower on one thread
        for p in range(count):
            base, fx, w = self.weights(self.x[p], origin, dx)
            affine = mass * self.C[p] - dt * volume * 4.0 / dx**2 * self.stress[p]
            momentum = mass * self.v[p] + dt * self.force[p]
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                weight = w[i, 0] * w[j, 1] * w[k, 2]
                self.momentum[base + offset] += weight * (momentum + affine @ ((offset - fx) * dx))
                self.node_mass[base + offset] += weight * mass
                ti.atomic_max(self.node_grip[base + offset], self.grip[p])

    @ti.kernel
    def grid_step(self, size: ivec3, low: ivec3, dt: ti.f32, gravity: vec3, keep: ti.f32, ground: ti.i32,
                  friction: ti.f32, handle_velocity: vec3):
        """v = keep (p / m + dt g), or the grip's velocity (a pull's hold: with the handle, or still);
        then at or below the ground (global z index <= 0) a node moving down loses its normal velocity
        and its slip shrinks by friction |v_n| (Coulomb): a handle pulled into the ground stops there."""
        for i, j, k in ti.ndrange(size[0], size[1], size[2]):
            m = self.node_mass[i, j, k]
            if m > 0:
                v = keep * (self.momentum[i, j, k] / m + dt * gravity)
                if self.node_grip[i, j, k] == HANDLE:
                    v = handle_velocity
                elif self.node_grip[i, j, k] == HELD:
                    v = ti.Vector.zero(ti.f32, 3)
                if ground and low[2] + k <= 0 and v[2] < 0:
                    slip = ti.Vector([v[0], v[1], 0.0])
                    speed = slip.norm()
                    kept = 0.0
                    if speed > friction * -v[2]:
                        kept = 1.0 - friction * -v[2] / speed
                    v = kept * slip
                self.momentum[i, j, k] = v

    @ti.kernel
    def to_particles(self, count: ti.i32, dt: ti.f32, dx: ti.f32, origin: vec3, model: ti.i32, mu: ti.f32,
                     lam: ti.f32, hardening: ti.f32, compression: ti.f32, stretch: ti.f32, yield_stress: ti.f32,
                     cone: ti.f32, ground: ti.i32, floor: ti.f32) -> ti.types.vector(9, ti.f32):
        """Grid to particle: v = sum w v_i, C = 4/dx^2 sum w v_i (x_i - x_p)^T, x += dt v (kept above the
        ground), F = (1 + dt C) F; then the plastic return of F_E and its stress for the next step.
        Returns the particles' bounds, top speed, non-finite count and hardest snow hardening."""
        for d in ti.static(range(3)):
            self.stats[d] = 1e30
            self.stats[3 + d] = -1e30
        self.stats[6] = 0.0
        self.stats[7] = 0.0
        self.stats[8] = 1.0
        ti.loop_config(serialize=True)
        for p in range(count):
            base, fx, w = self.weights(self.x[p], origin, dx)
            v = ti.Vector.zero(ti.f32, 3)
            C = ti.Matrix.zero(ti.f32, 3, 3)
            for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                offset = ti.Vector([i, j, k])
                weight = w[i, 0] * w[j, 1] * w[k, 2]
                node = self.momentum[base + offset]
                v += weight * node
                C += 4.0 / dx**2 * weight * node.outer_product((offset - fx) * dx)
            x = self.x[p] + dt * v
            if ground and x[2] < floor:  # a particle that slipped under the ground is put back on it
                x[2] = floor
            self.x[p], self.v[p], self.C[p] = x, v, C
            stepped = ti.Matrix.identity(ti.f32, 3) + dt * C
            self.deformation[p] = stepped @ self.deformation[p]
            self.plastic_return(p, stepped @ self.elastic[p], model, mu, lam, hardening, compression, stretch,
                                yield_stress, cone)
            if not (ti.abs(x) < 1e6).all() or not (ti.abs(v) < 1e6).all():  # also false for NaN
                self.stats[7] += 1.0
            for d in ti.static(range(3)):
                ti.atomic_min(self.stats[d], x[d])
                ti.atomic_max(self.stats[3 + d], x[d])
            ti.atomic_max(self.stats[6], v.norm())
            ti.atomic_max(self.stats[8], self.hardening_factor(p, model, hardening))
        return ti.Vector([self.stats[d] for d in ti.static(range(9))])

    @ti.func
    def hardening_factor(self, p, model, hardening):
        h = 1.0
        if model == SNOW:
            h = ti.min(ti.exp(hardening * (1.0 - self.plastic_volume[p])), HARDENING_LIMIT)
        return h

    @ti.func
    def plastic_return(self, p, trial, model, mu, lam, hardening, compression, stretch, yield_stress, cone):
        """F_E = U S V^T with its singular values S returned to the yield surface, and the Kirchhoff stress:

        jelly      tau = 2 mu (F - R) F^T + lambda J (J - 1),  R = U V^T          (fixed corotated)
        snow       S clamped to [1 - compression, 1 + stretch], J_P *= det S_trial / det S,
                   the same stress with mu, lambda times h = min(exp(hardening (1 - J_P)), HARDENING_LIMIT)
        plasticine eps = log S, eps' = eps - tr(eps)/3, dgamma = |eps'| - yield / (2 mu) > 0: eps -= dgamma eps'/|eps'|
        sand       eps' likewise; tr(eps) >= 0 (pulled apart): eps = 0; else
                   dgamma = |eps'| + (3 lambda + 2 mu) / (2 mu) tr(eps) alpha > 0: eps -= dgamma eps'/|eps'|
        plasticine and sand: tau = U (2 mu eps + lambda tr(eps) 1) U^T                  (Hencky)
        """
        U, S, V = ti.svd(trial)
        F = trial
        tau = ti.Matrix.zero(ti.f32, 3, 3)
        if model == JELLY or model == SNOW:
            h = 1.0
            if model == SNOW:
                clamped = S
                for d in ti.static(range(3)):
                    clamped[d, d] = ti.min(ti.max(S[d, d], 1.0 - compression), 1.0 + stretch)
                self.plastic_volume[p] *= S.determinant() / clamped.determinant()
                F = U @ clamped @ V.transpose()
                h = self.hardening_factor(p, model, hardening)
            J = F.determinant()
            identity = ti.Matrix.identity(ti.f32, 3)
            tau = 2.0 * mu * h * (F - U @ V.transpose()) @ F.transpose() + lam * h * J * (J - 1.0) * identity
        else:
            eps = ti.Vector([ti.log(ti.max(S[d, d], TINY_STRETCH)) for d in range(3)])
            trace = eps.sum()
            deviator = eps - trace / 3.0
            size = deviator.norm()
            if model == PLASTICINE:
                dgamma = size - yield_stress / (2.0 * mu)
                if dgamma > 0:
                    eps -= dgamma / size * deviator
            elif trace >= 0:
                eps = ti.Vector.zero(ti.f32, 3)
            else:
                dgamma = size + (3.0 * lam + 2.0 * mu) / (2.0 * mu) * trace * cone
                if dgamma > 0:
                    eps -= dgamma / size * deviator
            F = U @ _diagonal(ti.exp(eps)) @ V.transpose()
            tau = U @ _diagonal(2.0 * mu * eps + lam * eps.sum()) @ U.transpose()
        self.elastic[p] = F
        self.stress[p] = tau
