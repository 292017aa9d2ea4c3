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

from . import output
from .preferences import SolverOptions, solver_options
from .estimate import BakeEstimate
from .colliders import read_colliders
from .handoff import HandOff, at_frame, read_hand_off
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
    seconds: float = 0.0

    @classmethod
    def read(cls, obj, options: SolverOptions | None = None) -> "SimulationJob":
        """Everything the solve needs, copied out of Blender; ValueError says what is wrong.
        ``options`` overrides the preferences (the command line's ``--threads``)."""
        scene = bpy.context.scene
        check_target(obj)
        start, end = frame_range(obj, scene)
        size = len(obj.data.vertices) * (end - start + 1) * 12  # float32 xyz per vertex and frame
        if obj.neurok.output == "SHAPE_KEYS" and size > MAX_SHAPE_KEY_BYTES:
            raise ValueError(f"shape keys of {len(obj.data.vertices):,} vertices over {end - start + 1} frames would "
                             f"add {size / 2**30:.1f} GB to the file: set Bake To: Point Cache, or fewer frames")
        with at_frame(obj, scene, start):
            vertices, triangles, base = read_rest_mesh(obj, bpy.context.evaluated_depsgraph_get())
            hand_off = read_hand_off(obj, scene, start, end, vertices, triangles)
        scale = unit_scale(scene)
        conditions = read_conditions(obj, scene, start, end, base, scale, len(vertices))
        colliders = read_colliders(obj, scene, start, end, scale)
        conditions = dataclasses.replace(
            conditions, velocity=tuple(np.add(conditions.velocity, hand_off.velocity * scale)),
            angular_velocity=tuple(np.add(conditions.angular_velocity, hand_off.angular_velocity)), colliders=colliders)
        options = options or solver_options()
        met = (f"colliders: {', '.join(c.name for c in colliders)}",) if colliders else ()
        return cls(target=obj, name=obj.name, vertex_count=len(obj.data.vertices), start=start,
                   vertices=vertices * scale, triangles=triangles, points=base * scale, conditions=conditions,
                   hand_off=hand_off, scale=scale, options=options, notes=hand_off.notes + met)

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
        end = self.start + self.frames - 1
        return "; ".join((f"NeuROK: baked {self.frames} frames ({self.start}-{end}) of '{obj.name}' as "
                          f"{result.report.category} in {self.seconds:.1f} s", *self.notes, *self._solver_notes(result)))

    def _solver_notes(self, result) -> list[str]:
        """What the solver chose that the artist did not set: why auto chose the category, and a lift
        out of the ground."""
        report = result.report
        notes = [report.category_reason] if report.category_reason else []
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
