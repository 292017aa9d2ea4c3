"""The frame loop: substeps, chart changes, energy bookkeeping, divergence checks, progress."""

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .dynamics import IMPACT_SPEED, RESOLVED_PHASE, LagrangianSystem, Rates
from .integrators import ADAPTIVE, IMPLICIT_RAYLEIGH, advance
from .options import AUTO

OUTPUT = "output"  # the map's point set drawn every frame (rollout's output_points)
DRAWN_POINTS = 2**18  # points a pass of the map's drawing takes at most, all its frames together (Drawing)

MIN_SUBSTEPS = 4
# Under ``auto`` a frame that starts clear of every surface and turns faster than FLIGHT_SPIN runs RK4
# where that takes at most FLIGHT_RK4 times the implicit step's steps: in flight nothing stiff acts but
# the potential and the pins, and on learned coordinates the implicit step takes the deformation's
# inertial terms at each step's start, an error that grows with the spin (a flat cloth box turning at
# 20 rad/s: 1.5 % of its kinetic energy in a second, where RK4 keeps 1e-5); a heavily damped or stiff
# body keeps the implicit step, whose steps its damping does not set
FLIGHT_RK4 = 3
FLIGHT_SPIN = 1.0  # rad/s
# A frame that starts with every body pressing on the ground, a collider or another body, and meets no
# impact in it, takes the steps of its motion (REST_SUBSTEPS at least), not those of the contact's
# stiff springs: its steps then no longer resolve the springs, which act at each step's end (backward
# Euler, dynamics.RESOLVED_PHASE), so a body resting, sliding or rolling on them holds still where the
# trapezoidal rule's crossing springs made it hop by g h^2. A frame in which a pushed pair moved along
# its surface's normal faster than IMPACT_SPEED (coming at it or leaving it) is redone at the
# contact's steps: an impact, its bounce included, is resolved by them. Below it a bounce would rise
# at most IMPACT_SPEED^2 / 2 g = 2 mm, which backward Euler's springs take out.
REST_SUBSTEPS = 1
MAX_CHART_DRIFT = 1.0  # rad: recenter before the rotation vector gets this far from zero
MAX_LATENT_DRIFT = 0.5  # prior standard deviations: no step moves the learned coordinates further
IMPLICIT_SPIN_STEP = 0.1  # rad: no implicit step turns a deforming body further (spin_substeps)
MAX_REFINEMENT = 8  # a frame that goes non-finite or unstable is redone with 2, 4, then 8 times the steps
# omega h of the stiffest spring (rad), (the contact's and pins', the potential's): each step turns
# it by at most this. RK4 (fourth order) keeps 0.994 of an undamped oscillation's amplitude a step at
# 1, so a bounce (pi steps) about 2 % low; the lower-order methods keep 0.5: at 1, leapfrog's phase
# error a step, (omega h)^3 / 24, grows eightfold and an overdamped creep left its analytic path
# (tests/core/test_physics.py). The implicit step is stable at any omega h: at pi a linear spring
# turns by at most half a period a step (the trapezoidal rule's 2 atan(pi / 2) = 2.0 rad), so a bounce
# spans a step or more (at 24 fps the ground's springs, k = 1e5 s^-2, take 5 steps a frame, except at
# rest: REST_SUBSTEPS); the
# potential stiffens away from rest, where a step linearized over a large move overshoots, so it
# keeps IMPLICIT_POTENTIAL_PHASE
IMPLICIT_POTENTIAL_PHASE = 2.0
STEP_PHASE = {"rk4": (1.0, 1.0), "implicit": (RESOLVED_PHASE, IMPLICIT_POTENTIAL_PHASE)}
LOWER_ORDER_PHASE = (0.5, 0.5)  # every other method
# c h of the fastest Rayleigh decay: past it RK4's exp(-c h) drifts (0.333 for 0.135 at 2), Euler's flips sign
STEP_DECAY = 1.0
EXPLOSION = 1.0  # unstable: a frame puts the energy balance off by more than this times the largest energy so far
# A body at rest sleeps: after SLEEP_TIME of frames whose mass points move at an RMS speed under
# SLEEP_SPEED of its size per second (1 mm/s for a 1 m body), its frames repeat until a load acts
SLEEP_SPEED = 1e-3
SLEEP_TIME = 0.5  # s


class SimulationError(RuntimeError):
    """The rollout became non-finite; nothing from it should be used."""


class SimulationCancelled(RuntimeError):
    """The progress callback asked to stop."""


@dataclass
class Trajectory:
    times: np.ndarray  # (F,)
    coordinates: np.ndarray  # (F, B, n), each frame in its own chart (see KinematicMap.recenter)
    velocities: np.ndarray  # (F, B, n)
    pose: dict[str, np.ndarray]  # KinematicMap.pose per frame, (F, B, ...)
    points: np.ndarray  # (F, B, P, 3) float32 world positions of the requested output points
    energy: dict[str, np.ndarray]  # each (F, B)
    substeps: int  # integration steps of a frame that meets the ground (see Run)
    method: str  # the integrator that ran (``auto`` resolved; a damped stiff start's first frames may take another)
    refined_frames: int = 0  # frames redone with more steps after going non-finite or unstable
    asleep_frames: int = 0  # frames the body slept through at rest (Run)
    steps: int = 0  # integration steps of the whole run (each frame's accepted attempt)


def choose_method(method: str) -> str:
    """``auto``: the implicit step, whose steps are set by the motion, not by the stiff contact, pins,
    potential wall or damping that hold it (docs/physics.md, "Integrators and step sizes")."""
    return "implicit" if method == AUTO else method


def step_phase(method: str) -> tuple[float, float]:
    """The largest omega h of the stiffest linear spring and of the potential a step of ``method`` may
    take (STEP_PHASE)."""
    return STEP_PHASE.get(method, LOWER_ORDER_PHASE)


def choose_substeps(system: LagrangianSystem, fps: float, method: str, q: torch.Tensor | None,
                    q_dot: torch.Tensor, contact: bool = True) -> int:
    """Steps per frame: the stiffest spring (at rest and at ``q``; the ground's only with ``contact``)
    gets omega h <= step_phase and, for an explicit method, the fastest damped motion c h <= STEP_DECAY
    (adaptive methods choose their own steps inside), and no step moves the coordinates more than
    MAX_CHART_DRIFT within their chart."""
    if method in ADAPTIVE:
        return chart_substeps(system, fps, q_dot)
    return max(MIN_SUBSTEPS, chart_substeps(system, fps, q_dot),
               rate_substeps(system.fastest_rates(q, contact=contact), fps, method))


def rate_substeps(rates: Rates, fps: float, method: str) -> int:
    """The steps a frame needs for the springs and the potential (omega h <= step_phase each) and,
    unless ``method`` takes the damping implicitly, the Rayleigh decay (c h <= STEP_DECAY)."""
    decay = 0.0 if method in IMPLICIT_RAYLEIGH else rates.decay
    springs, potential = step_phase(method)
    return max(math.ceil(rates.springs / (fps * springs)), math.ceil(rates.potential / (fps * potential)),
               math.ceil(decay / (fps * STEP_DECAY)))


def resting_substeps(system: LagrangianSystem, fps: float, method: str, q: torch.Tensor | None,
                     q_dot: torch.Tensor) -> int:
    """Steps per frame on the ground without an impact (REST_SUBSTEPS at least): the implicit step's
    for the body alone (its chart, its Rayleigh decay, the pins), and for the potential only when
    nothing damps it, since the implicit step damps each deformation exactly by exp(-c h) a step
    whatever omega h; 0 for a method that takes no such frames."""
    if method != "implicit":
        return 0
    rates = system.fastest_rates(q, contact=False)
    if system.damped:
        rates = Rates(rates.springs, 0.0, rates.decay)
    return max(REST_SUBSTEPS, chart_substeps(system, fps, q_dot), rate_substeps(rates, fps, method))


def relaxing_start(system: LagrangianSystem, method: str, substeps: int | None) -> bool:
    """Whether the run sizes its steps at rest and each frame by the state it starts from, rather than
    the whole run by its start: so for a damped body when the steps are automatic. A pulled start
    sits on the learned potential's wall, 5-20 times as stiff as at rest, and the damping relaxes it
    within frames; sized by it, every frame would take the wall's steps. An undamped body keeps its
    start's energy and comes back to its stiffness, so it keeps the start's steps throughout."""
    return not substeps and method not in ADAPTIVE and system.damped


def steps_within(speed: float, fps: float, per_step: float) -> int:
    """The fewest steps per frame that move something going at ``speed`` (per second) by at most
    ``per_step`` each."""
    return max(1, math.ceil(speed / (fps * per_step)))


def chart_substeps(system: LagrangianSystem, fps: float, q_dot: torch.Tensor) -> int:
    """The fewest steps per frame that keep each step's move within the chart below MAX_CHART_DRIFT."""
    return steps_within(system.map.chart_speed(q_dot), fps, MAX_CHART_DRIFT)


def latent_substeps(system: LagrangianSystem, fps: float, q_dot: torch.Tensor) -> int:
    """The fewest steps per frame that move the learned coordinates by at most MAX_LATENT_DRIFT each.

    The potential's wall rises as |s|^6 within a prior standard deviation, and a direction that moves
    little mass can cross the whole space within a step sized for the springs: a spinning pair of
    spectacles swung one at 1500 std/s, 2.4 std per step, and the energy blew up (sextic-well test in
    tests/core/test_simulate.py)."""
    return steps_within(system.map.latent_speed(q_dot), fps, MAX_LATENT_DRIFT)


def spin_substeps(system: LagrangianSystem, fps: float, q_dot: torch.Tensor, method: str) -> int:
    """The fewest steps per frame that turn a deforming body by at most IMPLICIT_SPIN_STEP each under the
    implicit step, which takes the inertial terms (Coriolis, centrifugal) at each step's start.

    A 16-vertex pair of scissors (0.6 kg) spun to 200-300 rad/s by a 14 N push gained 29 J past the
    push's 12 J of work at 5-34 steps a frame (the contact's, the latent speed's), refined to 40,
    and went unstable; at 0.25 rad a step its books were off by 26 %, at 0.1 rad by 4 %. Up to
    12 rad/s at 24 fps it asks for no more than the 5 steps a frame that contact takes."""
    if method != "implicit" or not system.deforms:
        return 1
    return steps_within(system.map.chart_speed(q_dot), fps, IMPLICIT_SPIN_STEP)


class Run:
    """Integration from an initial state, a frame at a time: ``rollout`` drives one over a fixed number
    of frames, ``interactive.LiveBody`` one frame per step as the artist acts on the body.

    ``substeps`` overrides the automatic choice, but never goes below what keeps the chart valid. A
    frame whose learned coordinates move fast takes more (``latent_substeps``), as does a deforming body
    spinning fast under the implicit step (``spin_substeps``), and a frame that goes
    non-finite or unstable is redone with more. A frame that starts clear of the ground takes the
    steps of the body alone (``flight_substeps``), not those of the ground's stiff springs, and is
    redone with those if a contact force acted in it after all: contact is always integrated at its
    own steps. One that starts with every body pressing on the ground, a collider or another body
    takes its motion's (``resting_substeps``) and is redone at the contact's if an impact happens in
    it (IMPACT_SPEED); a frame after one with an impact takes the contact's steps straight away. With
    ``sleep``, a body at rest (its mass points' RMS speed under SLEEP_SPEED of its size per second for
    SLEEP_TIME) sleeps: its last tiny kinetic energy is booked as dissipated and
    its frames repeat, unintegrated, until a load acts or its material changes (``use``), as a rigid
    body engine deactivates; a body that keeps moving (an undamped wobble, a slow roll) never does.
    Work runs in inference mode: no autograd bookkeeping on the thousands of small operations of a run.
    """

    @torch.inference_mode()
    def __init__(self, system: LagrangianSystem, q0: torch.Tensor, q_dot0: torch.Tensor, fps: float, method: str,
                 output_points: torch.Tensor, substeps: int | None = None, sleep: bool = False):
        self.fps, self.requested, self.fixed_substeps = fps, method, substeps
        self.sleeps, self.slept = sleep, 0  # asleep and still (frames at rest in a row) are set by use
        self._drawn = None  # (q, its output points): a sleeping body is drawn once
        self.q, self.q_dot, self.frame, self.refined = q0, q_dot0, 0, 0
        self.impacting = False  # an impact went on in the last frame: the next takes the contact's steps
        self.steps = 0  # integration steps of the last frame made
        self.incoming = torch.full((q0.shape[0],), torch.nan, dtype=q0.dtype)  # an impact's incoming speed (restitute)
        self.work = torch.zeros(q0.shape[0], dtype=q0.dtype)
        self.dissipated = torch.zeros_like(self.work)
        self.balance = torch.zeros_like(self.work)
        self.energy = None
        system.map.attach(OUTPUT, output_points, output=True)
        system.set_interval(0.0, 0.0, q0, q_dot0, fresh=True)  # the colliders' planes where it starts
        self.use(system, sized_at=q0)
        self.total0 = _stored(self.energy)
        self.scale = torch.maximum(_energy_scale(self.energy, self.work, self.dissipated), _energy_floor(system))

    @torch.inference_mode()
    def use(self, system: LagrangianSystem, sized_at: torch.Tensor | None = None) -> None:
        """Integrate ``system`` from here on (the same map, another material or load): its method and
        steps are chosen anew, and the energy balance carries on across the change of potential."""
        stored = None if self.energy is None else _stored(self.energy)
        self.system = system
        self.asleep, self.still = False, 0  # a new material or load wakes the body
        self.relaxing = relaxing_start(system, self.requested, self.fixed_substeps)
        sized_at = None if self.relaxing else (sized_at if sized_at is not None else self.q)
        self.method = choose_method(self.requested)
        self.spinning = None  # (RK4, its steps) for frames in flight that spin (FLIGHT_RK4)
        self.rest_rates = system.fastest_rates() if self.relaxing else None
        if self.fixed_substeps:
            self.substeps = max(self.fixed_substeps, chart_substeps(system, self.fps, self.q_dot))
            self.flight_substeps = self.rest_substeps = self.substeps
        else:
            self.substeps = choose_substeps(system, self.fps, self.method, sized_at, self.q_dot)
            self.flight_substeps = choose_substeps(system, self.fps, self.method, sized_at, self.q_dot, contact=False)
            self.rest_substeps = resting_substeps(system, self.fps, self.method, sized_at, self.q_dot)
            if self.requested == AUTO and self.method == "implicit":
                explicit = choose_substeps(system, self.fps, "rk4", sized_at, self.q_dot, contact=False)
                if explicit <= FLIGHT_RK4 * self.flight_substeps:
                    self.spinning = ("rk4", explicit)
        self.energy = system.energies(self.q, self.q_dot)
        self.energy["load_work"], self.energy["dissipated"] = self.work, self.dissipated
        if stored is not None:  # the new potential's energy is no integration error
            self.total0 = self.total0 + _stored(self.energy) - stored

    @torch.inference_mode()
    def advance(self) -> None:
        """Integrate one frame; SimulationError if it goes non-finite or unstable even with
        MAX_REFINEMENT times its steps."""
        system, fps, dt = self.system, self.fps, 1.0 / self.fps
        frame, q, q_dot = self.frame + 1, self.q, self.q_dot
        if self.asleep and not system.loaded((frame - 1) * dt, frame * dt):
            self.frame, self.steps, self.slept = frame, 0, self.slept + 1
            return
        self.asleep = False
        moving = max(latent_substeps(system, fps, q_dot), spin_substeps(system, fps, q_dot, self.method))
        base = max(self.substeps, moving)
        if self.relaxing:  # until a frame starts no stiffer than rest
            rates = Rates(*(max(a, b) for a, b in zip(self.rest_rates, system.fastest_rates(q, rest=False))))
            self.relaxing = rate_substeps(rates, fps, self.method) > self.substeps
            if self.relaxing:
                base = max(base, rate_substeps(rates, fps, self.method))
        flight, flight_method = self.flight_substeps, self.method
        if self.spinning is not None and system.map.chart_speed(q_dot) > FLIGHT_SPIN:
            flight_method, flight = self.spinning
        flight = max(flight, latent_substeps(system, fps, q_dot), spin_substeps(system, fps, q_dot, flight_method))
        cheaper = flight < base or flight_method != self.method
        rest = max(self.rest_substeps, moving)
        flying = not self.relaxing and cheaper and system.clear_of_contact(q, q_dot, (frame - 1) * dt, dt)
        resting = not (flying or self.relaxing or self.impacting) and self.rest_substeps and rest < base \
            and bool(system.touching(q, (frame - 1) * dt).all())
        steps = flight if flying else rest if resting else base
        snapshot, attempts = system.snapshot(), 0
        while True:
            if attempts:  # one that failed may have recentered, flowed or met colliders on the way
                system.restore(snapshot)  # (the first keeps what the last frame's energies evaluated)
            attempts += 1
            system.touched, system.contact_speed = False, 0.0
            advanced = advance_frame(system, q, q_dot, self.incoming, (frame - 1) * dt, dt, steps,
                                     flight_method if flying else self.method)
            if flying and (advanced is None or system.touched):  # it reached the ground: the contact's steps
                flying, steps = False, base
                continue
            if resting and (advanced is None or system.contact_speed > IMPACT_SPEED):  # an impact: the contact's steps
                resting, steps = False, base
                continue
            if advanced is not None:
                energy = system.energies(advanced[0], advanced[1])
                work, dissipated = self.work + advanced[3], self.dissipated + advanced[4]
                balance = _stored(energy) - work + dissipated - self.total0
                if bool(((balance - self.balance).abs() <= EXPLOSION * self.scale).all()):
                    break
            if flying or resting:  # unstable in flight or at rest: the frame again at the full steps, then refined
                flying = resting = False
                steps = base
                continue
            if steps >= base * MAX_REFINEMENT:
                what = "non-finite" if advanced is None else "unstable (its energy grew without a source)"
                raise SimulationError(f"the simulation became {what} between frames {frame - 1} and {frame}, "
                                      f"even with {steps} steps")
            steps *= 2
        self.refined += steps > base
        self.steps, self.impacting = steps, system.contact_speed > IMPACT_SPEED
        self.q, self.q_dot, self.incoming = advanced[:3]
        self.work, self.dissipated, self.balance, self.frame = work, dissipated, balance, frame
        energy["load_work"], energy["dissipated"] = work, dissipated
        self.energy = energy
        self.scale = torch.maximum(self.scale, _energy_scale(energy, work, dissipated))
        if self.sleeps:
            self._rest(system)

    def _rest(self, system: LagrangianSystem) -> None:
        """Count the frames at rest; after SLEEP_TIME of them the body sleeps, its velocity zeroed and
        its kinetic energy booked as dissipated."""
        mass = system.masses.sum(-1)
        still = bool((self.energy["kinetic"] <= 0.5 * mass * (SLEEP_SPEED * system.map.extent) ** 2).all())
        self.still = self.still + 1 if still else 0
        if self.still >= math.ceil(SLEEP_TIME * self.fps):
            self.asleep = True
            self.dissipated = self.dissipated + self.energy["kinetic"]
            self.q_dot = torch.zeros_like(self.q_dot)
            self.energy = dict(self.energy, kinetic=torch.zeros_like(mass), dissipated=self.dissipated)

    @torch.inference_mode()
    def positions(self) -> torch.Tensor:
        """The output points (B, P, 3) where the current frame puts them, float32."""
        if self._drawn is None or self._drawn[0] is not self.q:
            self._drawn = (self.q, self.system.map.embed(self.q, OUTPUT).to(torch.float32))
        return self._drawn[1]

    @torch.inference_mode()
    def row(self):
        """The current frame as recorded: (q, q_dot, energies, pose); its points are drawn by ``Drawing``."""
        pose = {k: v.clone() for k, v in self.system.map.pose(self.q).items()}
        return self.q.clone(), self.q_dot.clone(), dict(self.energy), pose


class Drawing:
    """A run's ``frames`` frames of the points ``name`` (``batch`` bodies, ``points`` each), drawn by the
    map (``KinematicMap.frame``, ``draw``) in passes of at most DRAWN_POINTS points as the run keeps
    them, each pass written into the one array of all frames: a frame repeated unchanged (a sleeping
    body) is copied from the one before, not drawn again."""

    def __init__(self, kmap, name: str, frames: int, batch: int, points: int):
        self.map, self.name = kmap, name
        self.per_pass = max(1, DRAWN_POINTS // max(batch * points, 1))
        self.out = torch.empty(frames, batch, points, 3, dtype=torch.float32)
        self.pending, self.repeated, self.kept, self.last = [], [], 0, None  # (frame, what draw needs)

    @torch.inference_mode()
    def keep(self, q) -> None:
        """The next frame, at q, as the map stands now."""
        if q is self.last:
            self.repeated.append(self.kept)
        else:
            self.pending.append((self.kept, self.map.frame(q, self.name)))
            self.last = q
            if len(self.pending) == self.per_pass:
                self._pass()
        self.kept += 1

    def _pass(self) -> None:
        rows, frames = zip(*self.pending)
        self.out[list(rows)] = self.map.draw(list(frames), self.name).to(torch.float32)
        self.pending = []

    @torch.inference_mode()
    def points(self) -> torch.Tensor:
        """(F, B, P, 3) float32, one row per frame kept."""
        if self.pending:
            self._pass()
        for frame in self.repeated:  # in order: a run of repeats copies along it
            self.out[frame] = self.out[frame - 1]
        return self.out[:self.kept]


def rollout(
    system: LagrangianSystem,
    q0: torch.Tensor,
    q_dot0: torch.Tensor,
    frames: int,
    fps: float,
    method: str,
    output_points: torch.Tensor,
    substeps: int | None = None,
    progress: Callable[[int, int], bool | None] | None = None,
    sleep: bool = False,
) -> Trajectory:
    """Integrate ``frames`` frames (a ``Run``, which ``sleep`` lets put a body at rest to sleep);
    frame 0 is the initial state.

    ``progress(done, total)`` is called after every frame; returning False cancels.
    """
    run = Run(system, q0, q_dot0, fps, method, output_points, substeps, sleep)
    drawing = Drawing(system.map, OUTPUT, frames, *output_points.shape[:2])
    rows, steps = [run.row()], 0
    drawing.keep(run.q)
    for frame in range(1, frames):
        run.advance()
        rows.append(run.row())
        drawing.keep(run.q)
        steps += run.steps
        if progress is not None and progress(frame, frames - 1) is False:
            raise SimulationCancelled(f"cancelled at frame {frame} of {frames - 1}")

    energy = {k: torch.stack([r[2][k] for r in rows]).numpy() for k in rows[0][2]}
    energy["total"] = _stored(energy)
    energy["balance"] = energy["total"] - energy["load_work"] + energy["dissipated"] - energy["total"][0]
    return Trajectory(
        times=np.arange(frames) * (1.0 / fps),
        coordinates=torch.stack([r[0] for r in rows]).numpy(),
        velocities=torch.stack([r[1] for r in rows]).numpy(),
        pose={k: torch.stack([r[3][k] for r in rows]).numpy() for k in rows[0][3]},
        points=drawing.points().numpy(),
        energy=energy,
        substeps=run.substeps,
        method=run.method,
        refined_frames=run.refined,
        asleep_frames=run.slept,
        steps=steps,
    )


def _stored(e):
    """Kinetic plus every potential (J, per body)."""
    return e["kinetic"] + e["potential"] + e["gravity"] + e["contact"] + e["pins"]


def _energy_scale(e, work, dissipated):
    """The size of the energies in play (J, per body): an error of EXPLOSION times this is no
    integration error but a blow-up. Gravity's potential has an arbitrary zero, so it is left out:
    what it gives shows up as kinetic energy."""
    return e["kinetic"] + e["potential"].abs() + e["contact"] + e["pins"] + work.abs() + dissipated.abs()


def _energy_floor(system: LagrangianSystem):
    """M (|g| L + 1 m^2/s^2): the energy of a fall by the body's size plus a walking pace, so a body
    at rest still has a scale (J, per body)."""
    return system.masses.sum(-1) * (system.gravity.norm() * system.map.extent + 1.0)


def advance_frame(system: LagrangianSystem, q, q_dot, incoming, start: float, dt: float, steps: int, method: str):
    """One frame in ``steps`` equal steps, recentering the chart as it goes and, after each step,
    applying the impact laws (``LagrangianSystem.restitute``, ``incoming`` its state, and
    ``hold_landings``) and letting the map flow (its plastic return), all booked as dissipated; the
    colliders' planes are taken at the start of each step, their jump in contact energy booked as
    work: (q, q_dot, incoming, work, dissipated),
    or None if the state went non-finite (the caller redoes the frame with more steps: a stiff moment,
    a hard impact or the wall, needs them where the rest of the run does not)."""
    h = dt / steps
    work = dissipated = torch.zeros(q.shape[0], dtype=q.dtype)
    drift = 0.0  # how far the coordinates have moved in their chart since the last recenter
    for sub in range(steps):
        t0 = start + sub * h
        work = work + system.set_interval(t0, t0 + h, q, q_dot)
        before = q_dot
        q, q_dot, dw, dd = advance(system, q, q_dot, t0, t0 + h, method)
        if not (torch.isfinite(q).all() and torch.isfinite(q_dot).all()):
            return None
        q_dot, incoming, impact = system.restitute(q, q_dot, incoming, before)
        q_dot, settled = system.hold_landings(q, q_dot, incoming)
        work, dissipated = work + dw, dissipated + dd + impact + settled + system.map.flow(q)
        drift += system.map.chart_speed(q_dot) * h
        if drift > MAX_CHART_DRIFT or sub == steps - 1:
            q, q_dot = system.recenter(q, q_dot)
            drift = 0.0
    return q, q_dot, incoming, work, dissipated
