"""One simulation in three steps: read the scene, solve, bake.

Blender data may only be touched on the main thread. The solve holds none of it (numpy in, numpy
out), so it can run on a worker thread while the interface stays live (``start``, what the sidebar's
Simulate does) or inline (batch work, the console). Nothing in the scene changes before ``bake``:
a cancelled or failed solve leaves the scene exactly as it was.
"""

import dataclasses
import functools
import threading
import time
from dataclasses import dataclass
from typing import Callable

import bpy
import numpy as np

from . import hooks, output
from .preferences import SolverOptions, solver_options
from .estimate import BakeEstimate
from .colliders import read_colliders
from .handoff import HandOff, at_frame, read_hand_off
from .hooks import as_before_bake, pinned_path
from .scene_io import check_target, frame_range, read_conditions, read_rest_mesh, unit_scale

MAX_SHAPE_KEY_BYTES = 512 * 2**20  # beyond this a .blend of shape keys gets slow to save, load and play
@dataclass
class SimulationJob:
    target: object  # the bpy Object; it may be deleted or renamed while the solve runs
    name: str
    vertex_count: int
    start: int
    vertices: np.ndarray  # world, metres: the evaluated mesh the solver reads
    triangles: np.ndarray
    points: np.ndarray  # world, metres: the base-mesh vertices the bake moves
    conditions: object  # core.Conditions
    hand_off: HandOff  # the object's own transform and shape keys over the baked frames
    scale: float  # metres per scene unit
    options: SolverOptions
    notes: tuple[str, ...] = ()  # said with the summary: what the artist asked for and did not get
    hooked: bool = False  # its pins followed its Hook modifiers, which the bake turns off (hooks.py)
    seconds: float = 0.0

    @classmethod
    def read(cls, obj, options: SolverOptions | None = None, together: tuple = (),
             colliders: bool = True) -> "SimulationJob":
        """Everything the solve needs, copied out of Blender; ValueError says what is wrong.
        ``options`` overrides the preferences (the command line's ``--threads``); ``together``, the
        bodies simulated with it, which are no colliders of its; ``colliders=False`` leaves the scene's
        colliders unread (a scene's come with its first body)."""
        scene = bpy.context.scene
        check_target(obj)
        start, end = frame_range(obj, scene)
        size = len(obj.data.vertices) * (end - start + 1) * 12  # float32 xyz per vertex and frame
        if obj.neurok.output == "SHAPE_KEYS" and size > MAX_SHAPE_KEY_BYTES:
            raise ValueError(f"shape keys of {len(obj.data.vertices):,} vertices over {end - start + 1} frames would "
                             f"add {size / 2**30:.1f} GB to the file: set Bake To: Point Cache, or fewer frames")
        depsgraph = bpy.context.evaluated_depsgraph_get()
        scale = unit_scale(scene)
        with as_before_bake(obj):
            with at_frame(obj, scene, start):
                vertices, triangles, base = read_rest_mesh(obj, depsgraph)
                hand_off = read_hand_off(obj, scene, start, end, vertices, triangles)
            hooked = bool(obj.neurok.pin_group) and bool(hooks.acting(obj))
            if hooked:  # the bake moves the hooked start shape, and the pins go where the hooks put them
                base = vertices
            conditions = read_conditions(obj, scene, start, end, base, scale, len(vertices))
            if hooked:
                path = pinned_path(obj, scene, depsgraph, start, end, conditions.pins)
                conditions = dataclasses.replace(conditions, pin_path=path * scale)
        colliders = read_colliders(obj, scene, start, end, scale, exclude=together) if colliders else []
        if not hooked and conditions.pins is not None and np.abs(hand_off.worlds - hand_off.worlds[:1]).max() > 0:
            conditions = dataclasses.replace(conditions, pin_path=pins_carried(hand_off.worlds, vertices[conditions.pins]) * scale)
        conditions = dataclasses.replace(
            conditions, velocity=tuple(np.add(conditions.velocity, hand_off.velocity * scale)),
            angular_velocity=tuple(np.add(conditions.angular_velocity, hand_off.angular_velocity)), colliders=colliders)
        options = options or solver_options()
        met = (f"colliders: {', '.join(c.name for c in colliders)}",) if colliders else ()
        return cls(target=obj, name=obj.name, vertex_count=len(obj.data.vertices), start=start,
                   vertices=vertices * scale, triangles=triangles, points=base * scale, conditions=conditions,
                   hand_off=hand_off, scale=scale, options=options, notes=hand_off.notes + met, hooked=hooked)

    @property
    def frames(self) -> int:
        return self.conditions.frames

    def estimate(self) -> BakeEstimate:
        return BakeEstimate.of(len(self.points), self.frames, self.conditions.category != "rigid")

    def solve(self, progress: Callable[[int, int], bool | None] | None = None):
        """Run the solver (any thread). ``progress(done, total)`` returning False cancels
        (core.SimulationCancelled)."""
        import torch

        from .core import simulate

        torch.set_num_threads(self.options.torch_threads)
        began = time.perf_counter()
        model = None if self.conditions.category == "rigid" else load_model(self.options)
        result = simulate(self.vertices, self.triangles, self.conditions, model=model, progress=progress,
                          points=self.points)
        self.seconds = time.perf_counter() - began
        return result

    def bake(self, result) -> str:
        """Write ``result`` into the object (main thread); returns a one-line summary."""
        obj = self._live_target()
        rotations = result.pose.get("rotation", np.repeat(np.eye(3)[None], self.frames, 0))
        local = self.hand_off.local_positions(result.positions / np.float32(self.scale), rotations)
        output.bake(obj, local, self.start)
        turned_off = (hooks.turn_off(obj),) if self.hooked else ()
        end = self.start + self.frames - 1
        return "; ".join((f"NeuROK: baked {self.frames} frames ({self.start}-{end}) of '{obj.name}' as "
                          f"{result.report.category} in {self.seconds:.1f} s", *self.notes, *self._solver_notes(result),
                          *turned_off))

    def _solver_notes(self, result) -> list[str]:
        """What the solver chose that the artist did not set: why auto chose the category, where a
        hinged object's parts are joined, and a lift out of the ground."""
        report = result.report
        notes = [report.category_reason] if report.category_reason else []
        if report.joints:
            notes.append(f"its parts are joined in {report.joints} place{'s' * (report.joints > 1)}, free to turn there")
        if report.lifted > 1e-4 * np.ptp(self.vertices, axis=0).max():
            notes.append(f"it started {report.lifted:.3g} m inside the ground, so it was lifted onto it")
        return notes

    def _live_target(self):
        """The object to bake into, or ValueError if it went away or changed while the solve ran.

        A deleted object (or one freed by undo or a file load) raises ReferenceError on access; after
        an undo the same object comes back under its name."""
        try:
            obj = self.target
            obj.name
        except ReferenceError:
            obj = bpy.data.objects.get(self.name)
        if obj is None or obj.type != "MESH" or len(obj.data.vertices) != self.vertex_count:
            raise ValueError(f"'{self.name}' was deleted or its mesh changed while it was simulated; nothing was baked")
        check_target(obj)
        return obj


def pins_carried(worlds: np.ndarray, pinned: np.ndarray) -> np.ndarray:
    """Where an animated object's transform takes its pinned vertices (world, at the start) at each
    frame: a_t = W_t W_0^-1 a_0 (F, N, 3), so the pins follow its keyframes, parent or constraints."""
    moves = worlds @ np.linalg.inv(worlds[0])
    return np.einsum("fij,pj->fpi", moves[:, :3, :3], pinned) + moves[:, None, :3, 3]


SHARED_SETTINGS = {"frames": "frame range", "ground_height": "ground", "integrator": "integrator",
                   "substeps": "substeps", "sleep": "sleep"}


@dataclass
class SceneJob:
    """Several bodies simulated together (``core.simulate_scene``): each read as a SimulationJob and
    baked into its own object, solved in one run with one progress count. The interface of
    SimulationJob, so the buttons, the console and batch work take either."""

    jobs: list[SimulationJob]

    @classmethod
    def read(cls, objects, options: SolverOptions | None = None) -> "SceneJob":
        """Each object read as Simulate reads one; ValueError when they do not share a frame range,
        ground, integrator, substeps and sleep (a scene runs on one clock), naming the two that differ."""
        objects = list(objects)
        jobs = [SimulationJob.read(obj, options, together=tuple(objects), colliders=i == 0)
                for i, obj in enumerate(objects)]
        first = jobs[0]
        for other in jobs[1:]:
            if other.start != first.start:
                raise ValueError(f"'{other.name}' starts at frame {other.start} and '{first.name}' at {first.start}: "
                                 "bodies simulated together share their frame range")
            for field, label in SHARED_SETTINGS.items():
                if getattr(other.conditions, field) != getattr(first.conditions, field):
                    raise ValueError(f"'{other.name}' and '{first.name}' differ in {label}: bodies simulated together "
                                     "share their frame range, ground, integrator, substeps and sleep")
        return cls(jobs)

    @property
    def name(self) -> str:
        names = [job.name for job in self.jobs]
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    @property
    def frames(self) -> int:
        return self.jobs[0].frames

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(note for job in self.jobs for note in job.notes)

    def estimate(self) -> BakeEstimate:
        return BakeEstimate.of(sum(len(job.points) for job in self.jobs), self.frames,
                               any(job.conditions.category != "rigid" for job in self.jobs))

    def solve(self, progress: Callable[[int, int], bool | None] | None = None):
        """All bodies in one run (any thread); a SimulationResult per body."""
        import torch

        from .core import simulate_scene

        options = self.jobs[0].options
        torch.set_num_threads(options.torch_threads)
        began = time.perf_counter()
        learned = any(job.conditions.category != "rigid" for job in self.jobs)
        results = simulate_scene([(job.vertices, job.triangles, job.conditions) for job in self.jobs],
                                 model=load_model(options) if learned else None, progress=progress,
                                 points=[job.points for job in self.jobs])
        for job in self.jobs:
            job.seconds = time.perf_counter() - began
        return results

    def bake(self, results) -> str:
        """Bake each body's frames into its object (main thread); a summary of them all. Every object
        is checked before the first is touched, so a body deleted meanwhile leaves all unbaked."""
        for job in self.jobs:
            job._live_target()
        summaries = [job.bake(result) for job, result in zip(self.jobs, results)]
        return f"NeuROK: {len(self.jobs)} bodies together: " + " | ".join(s.removeprefix("NeuROK: ") for s in summaries)


def read_selection(context, options: SolverOptions | None = None):
    """What Simulate acts on: the active mesh, with every other selected mesh that is no collider
    (no Collision modifier) simulated together with it (a SceneJob), else the active one alone."""
    bodies = simulation_bodies(context)
    return SimulationJob.read(context.active_object, options) if len(bodies) < 2 else SceneJob.read(bodies, options)


def simulation_bodies(context) -> list:
    """The active object first, then the other selected meshes that are no colliders."""
    active = context.active_object
    others = [ob for ob in context.selected_objects if ob is not active and ob.type == "MESH"
              and not any(m.type == "COLLISION" for m in ob.modifiers)]
    return [active] + others


@functools.cache
def load_model(options: SolverOptions):
    """The model, loaded once per session and per weights; ValueError names a missing or broken file."""
    from .core import NeuROK

    return NeuROK.load(options.weights)


class BackgroundSolve:
    """``job.solve`` on a daemon thread. The main thread polls ``finished``, reads ``done`` and
    ``total`` for a progress bar, and calls ``cancel``; the solve stops at the next frame."""

    def __init__(self, job: SimulationJob):
        self.job = job
        self.done, self.total = 0, job.frames - 1
        self.result = self.error = None
        self._cancelled = False
        self._thread = threading.Thread(target=self._run, name=f"NeuROK {job.name}", daemon=True)

    def _run(self):
        try:
            self.result = self.job.solve(self._progress)
        except BaseException as error:  # handed to the main thread, which reports it
            self.error = error

    def _progress(self, done, total):
        self.done, self.total = done, total
        return not self._cancelled

    def outcome(self):
        """The result of a finished solve, or the error it stopped with, raised here on the main thread."""
        if self.error is not None:
            raise self.error
        return self.result

    def cancel(self):
        self._cancelled = True

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return self.finished


_current: BackgroundSolve | None = None


def running() -> BackgroundSolve | None:
    """The solve still running in the background, if any (a cancelled one counts until it stops)."""
    return _current if _current is not None and not _current.finished else None


def start(job: SimulationJob) -> BackgroundSolve:
    """Start ``job.solve`` in the background; one at a time, since each uses every core."""
    global _current
    if running() is not None:
        raise ValueError(f"NeuROK is still simulating '{running().job.name}'; wait for it or press Esc")
    _current = BackgroundSolve(job)
    _current._thread.start()
    return _current


@bpy.app.handlers.persistent
def cancel_on_file_load(*_):
    """A file load frees the objects being simulated: stop the solve rather than bake into another file."""
    if running() is not None:
        running().cancel()
