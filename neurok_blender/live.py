"""The viewport's live mode: the active body simulated as it is shown, pushed and thrown with the mouse.

The body and its settings are read as Simulate reads them (``SimulationJob.read``) and stepped by a
``core.LiveBody``, a frame per step (made on a ``LiveWorker`` thread from the viewport), each frame
written straight into the mesh. Every frame shown is kept, so Bake writes exactly what the artist
saw (shape keys or a point cache, as the object's Bake To says); Cancel puts the mesh back as it
was. The operator (``operators/live.py``) only turns events into these calls, so scripts and tests
drive a session the same way. While it runs the mesh shows the simulated base mesh alone (its own
shape keys pinned to the reference key), in the object's transform as it was at the start.

A grab holds a material point of the surface on a spring to the mouse: the point under the cursor
when the button went down, followed wherever the body takes it, pulled towards the cursor's place
at the grab's depth with the force M (w^2 (target - x) - 2 w v), w = 2 pi GRAB_FREQUENCY, the body's
mass M: critically damped, so a drag leads the body and a fast drag released throws it.
"""

import queue
import threading
import time

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from . import output
from .job import SimulationJob, load_model

GRAB_FREQUENCY = 2.0  # Hz: how stiffly the grabbed point follows the mouse

_current = None  # the LiveSession the viewport runs, if any


def running():
    """The session the viewport's Live runs now, or None (Simulate waits for it)."""
    return _current


def started(session) -> None:
    """The Live operator says which session it runs (None: it ended)."""
    global _current
    _current = session


class LiveSession:
    """One live run of ``obj`` from its current shape and settings; ValueError if it cannot start."""

    def __init__(self, obj, options=None):
        from .core import live

        self.job = job = SimulationJob.read(obj, options)
        self.obj, self.scale = obj, job.scale
        model = None if job.conditions.category == "rigid" else load_model(job.options)
        self.body = live(job.vertices, job.triangles, job.conditions, model=model, points=job.points)
        self.to_local = np.linalg.inv(np.array(obj.matrix_world, dtype=np.float64))  # the transform at the start
        mesh = obj.data
        mesh.calc_loop_triangles()
        self.triangles = np.empty((len(mesh.loop_triangles), 3), dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", self.triangles.ravel())
        self._keys = mesh.shape_keys.key_blocks if mesh.shape_keys is not None else None
        self._pinned = (obj.show_only_shape_key, obj.active_shape_key_index)
        self.original = self._read()
        if self._keys is not None:  # show the reference key alone: the live shape is written there
            obj.show_only_shape_key, obj.active_shape_key_index = True, 0
        self.material = (obj.neurok.stiffness, obj.neurok.damping)
        self.grab = None  # (triangle's vertices, barycentric weights, material point at frame 0 (m), depth along the ray (m))
        self.target = None  # world point (m) the grabbed point is pulled to
        self._held = None  # where the grabbed point was the frame before (m), for its velocity
        self.current = self.body.positions()  # world, m
        self.shown = [self._local(self.current)]
        self.seconds = 0.0  # spent stepping, for the frame rate

    # -- what the mesh shows ----------------------------------------------------------------------
    def _coordinates(self):
        return self._keys[0].data if self._keys is not None else self.obj.data.vertices

    def _read(self) -> np.ndarray:
        co = np.empty(len(self.obj.data.vertices) * 3, dtype=np.float32)
        self._coordinates().foreach_get("co", co)
        return co.reshape(-1, 3)

    def _write(self, local: np.ndarray) -> None:
        self._coordinates().foreach_set("co", np.ascontiguousarray(local, dtype=np.float32).ravel())
        self.obj.data.update()

    def _local(self, world_metres: np.ndarray) -> np.ndarray:
        """Object space (scene units) of world positions in metres, for the object's transform at the start."""
        return ((world_metres / self.scale) @ self.to_local[:3, :3].T.astype(np.float32)
                + self.to_local[:3, 3].astype(np.float32))

    @property
    def frames(self) -> int:
        """Frames shown, the first included."""
        return len(self.shown)

    @property
    def frame_rate(self) -> float:
        """Frames stepped per second of stepping."""
        return (self.frames - 1) / self.seconds if self.seconds > 0 else 0.0

    # -- one frame ----------------------------------------------------------------------------------
    def step(self) -> None:
        """Make the next frame and show it (main thread)."""
        self.show(self.advance(self.settings()))

    def settings(self):
        """What the next frame is made with, read on the main thread: the sidebar's stiffness and
        damping, and the grab (its point and the mouse's target) as it is now."""
        target = None if self.target is None else self.target.copy()
        return (self.obj.neurok.stiffness, self.obj.neurok.damping), self.grab, target

    def advance(self, settings) -> np.ndarray:
        """Make the next frame under ``settings`` (``settings()``); its world positions (m). Touches no
        Blender data, so it may run on a worker thread (``LiveWorker``) while the viewport stays live."""
        from .core import Force

        began = time.perf_counter()
        material, grab, target = settings
        if material != self.material and self.body.deforms:
            self.body.adjust(stiffness=material[0], damping=material[1])
        self.material = material
        forces = [] if grab is None else [Force(tuple(self._pull(grab, target)), point=tuple(grab[2]))]
        positions = self.body.step(forces)
        self.seconds += time.perf_counter() - began
        return positions

    def show(self, positions: np.ndarray) -> None:
        """Show a frame ``advance`` made, and keep it for the bake (main thread)."""
        self.current = positions
        local = self._local(positions)
        self.shown.append(local)
        self._write(local)

    def _pull(self, grab, target) -> np.ndarray:
        """M (w^2 (target - x) - 2 w v) on the grabbed point x (N, world)."""
        corners, weights = grab[0], grab[1]
        held = weights @ self.current[corners].astype(np.float64)
        velocity = np.zeros(3) if self._held is None else (held - self._held) * self.body.conditions.fps
        self._held = held
        w = 2 * np.pi * GRAB_FREQUENCY
        return self.body.conditions.mass * (w * w * (target - held) - 2 * w * velocity)

    # -- the mouse ------------------------------------------------------------------------------------
    def grab_at(self, origin, direction) -> bool:
        """Grab the surface where the ray from ``origin`` along ``direction`` (world, scene units)
        first meets the body as shown; False if it misses."""
        world = self.current.astype(np.float64)
        tree = BVHTree.FromPolygons([Vector(p) for p in world], self.triangles.tolist())
        start = np.asarray(origin, dtype=np.float64) * self.scale
        ray = np.asarray(direction, dtype=np.float64)
        hit, _, index, distance = tree.ray_cast(Vector(start), Vector(ray / np.linalg.norm(ray)))
        if hit is None:
            return False
        corners = self.triangles[index]
        weights = _barycentric(np.array(hit), world[corners])
        material = weights @ self.job.points[corners]  # the same point of the body at frame 0
        self.grab, self.target, self._held = (corners, weights, material, distance), np.array(hit), None
        return True

    def drag_to(self, origin, direction) -> None:
        """Move the grab's target to the mouse ray (world, scene units) at the depth it was grabbed at."""
        if self.grab is None:
            return
        ray = np.asarray(direction, dtype=np.float64)
        self.target = np.asarray(origin, dtype=np.float64) * self.scale + self.grab[3] * ray / np.linalg.norm(ray)

    def release(self) -> None:
        self.grab = self.target = self._held = None

    def restart(self) -> None:
        """Back to the first frame, keeping the current material; the frames shown so far are dropped."""
        self.release()
        self.body.reset()
        self.current = self.body.positions()
        self.shown = [self._local(self.current)]
        self.seconds = 0.0
        self._write(self.shown[0])

    # -- the end --------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Put the mesh back exactly as it was."""
        self._write(self.original)
        if self._keys is not None:
            self.obj.show_only_shape_key, self.obj.active_shape_key_index = self._pinned

    def bake(self) -> str:
        """Put the mesh back and bake the frames shown from the start frame on; a one-line summary."""
        self.cancel()
        output.bake(self.obj, np.stack(self.shown), self.job.start)
        end = self.job.start + self.frames - 1
        return (f"NeuROK: baked the {self.frames} live frames ({self.job.start}-{end}) of '{self.obj.name}' "
                f"at {self.frame_rate:.1f} frames/s")


class LiveWorker:
    """``LiveSession.advance`` on a daemon thread, one frame at a time, so the viewport turns and the
    mouse moves freely while a frame is made: the main thread asks for the next frame (``request``,
    with ``session.settings()``) and shows the one that came back (``take``); every frame made is
    shown, so a bake still keeps exactly what was seen."""

    def __init__(self, session: LiveSession):
        self.session = session
        self.busy = False  # a frame was asked for and not yet taken
        self._asked, self._made = queue.Queue(maxsize=1), queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._run, name=f"NeuROK live {session.obj.name}", daemon=True)
        self._thread.start()

    def _run(self):
        while (settings := self._asked.get()) is not None:
            try:
                self._made.put((self.session.advance(settings), None))
            except BaseException as error:  # handed to the main thread, which reports it
                self._made.put((None, error))

    def request(self, settings) -> None:
        """Ask for the next frame, unless one is being made."""
        if not self.busy:
            self.busy = True
            self._asked.put(settings)

    def take(self, wait: float | None = 0.0):
        """The frame made, or None while it is being made (waiting up to ``wait`` s, None: until it
        is); the error it stopped with is raised here."""
        if not self.busy:
            return None
        try:
            positions, error = self._made.get(block=wait != 0.0, timeout=wait)
        except queue.Empty:
            return None
        self.busy = False
        if error is not None:
            raise error
        return positions

    def settle(self) -> None:
        """Wait for a frame being made and drop it (before a restart, a cancel or a bake)."""
        if self.busy:
            try:
                self.take(wait=None)
            except Exception:  # its error no longer matters: the run is being reset or ended
                pass

    def stop(self) -> None:
        """Settle and end the thread."""
        self.settle()
        self._asked.put(None)
        self._thread.join()


def _barycentric(point: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Weights w (3,) with w @ corners = the point's projection onto the triangle's plane."""
    a, b, c = corners
    v0, v1, v2 = b - a, c - a, point - a
    d00, d01, d11, d20, d21 = v0 @ v0, v0 @ v1, v1 @ v1, v2 @ v0, v2 @ v1
    denominator = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / denominator
    w = (d00 * d21 - d01 * d20) / denominator
    return np.array([1.0 - v - w, v, w])
