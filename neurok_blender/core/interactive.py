"""One body simulated a frame at a time while the artist acts on it: the viewport's live mode.

    live = model.live(vertices, faces, Conditions(ground_height=0.0))      # or interactive.live(...)
    positions = live.step(forces=[Force((0.0, 0.0, 40.0), point=(0.1, 0.0, 1.0))])  # (V, 3) after one frame
    live.adjust(stiffness=0.5)                                             # softer from the next frame on
    live.reset()                                                           # back to frame 0

The frames are those ``simulation.simulate`` makes of the same conditions and forces: a
``trajectory.Run`` advanced one frame per step. A force passed to ``step`` acts over the frame that
step advances, at a material point given where it was at frame 0 (as ``Conditions.forces``); a drag
that keeps its point only changes the vector, while a new point is attached to the body first (a
fraction of a second on learned coordinates).
"""

import dataclasses
import math

import numpy as np
import torch

from .dynamics import Environment, LagrangianSystem
from .material import body_material
from .options import Conditions, Force
from .simulation import DTYPE, Body, prepare
from .trajectory import Run


class LiveBody:
    """A prepared body (``simulation.prepare``) and its run; ``model`` (a ``neurok.NeuROK``) for
    ``adjust`` on learned coordinates."""

    def __init__(self, body: Body, model=None):
        self.body, self.model = body, model
        self.conditions = body.conditions
        base = body.env  # the Conditions' own forces stay, each in its window
        self._base_loads = (base.load_points, base.load_vectors, base.load_windows)
        self._points = np.zeros((0, 3))  # the live forces' material points, attached after the Conditions' own
        self._start = body.kmap.snapshot()
        self._system = LagrangianSystem(body.kmap, body.env)
        self.run = self._new_run()

    def _new_run(self) -> Run:
        c = self.conditions
        return Run(self._system, self.body.q0, self.body.q_dot0, c.fps, c.integrator, self.body.output_points,
                   c.substeps, c.sleep)

    @property
    def frame(self) -> int:
        return self.run.frame

    @property
    def time(self) -> float:
        """s since frame 0."""
        return self.run.frame / self.conditions.fps

    @property
    def deforms(self) -> bool:
        """Whether the body moves on learned coordinates (``adjust`` has a material to change)."""
        return self.body.learned

    def positions(self) -> np.ndarray:
        """(V, 3) float32 world positions of the drawn points at the current frame."""
        return self.run.positions()[0].numpy()

    def step(self, forces: list[Force] = ()) -> np.ndarray:
        """Advance one frame with ``forces`` acting over it; the positions it ends at (V, 3).
        SimulationError if the frame goes non-finite or unstable."""
        self._act(list(forces))
        self.run.advance()
        return self.positions()

    def _act(self, forces: list[Force]) -> None:
        """Load this frame with ``forces``; without any, the last ones' points stay attached, unloaded."""
        vertices = self.body.vertices  # lifted out of the ground with the body, as a force's point is
        lift = np.array([0.0, 0.0, self.body.report.lifted])
        points, vectors = [np.zeros((0, 3))], [np.zeros((0, 3))]
        for i, force in enumerate(forces):
            force.check(len(vertices), f"forces[{i}]")
            at = force.application_points(vertices) + (lift if force.vertices is None else 0.0)
            points.append(at)
            vectors.append(np.repeat(force.share(vertices)[None], len(at), 0))
        if forces:
            self._points = np.concatenate(points)
        vectors = np.concatenate(vectors) if forces else np.zeros_like(self._points)
        t0 = self.time
        windows = np.repeat([[t0, t0 + 1.0 / self.conditions.fps]], len(self._points), 0)

        def joined(base, extra):
            return torch.cat([base, torch.as_tensor(extra, dtype=DTYPE).reshape(1, -1, base.shape[-1])], 1)

        base_points, base_vectors, base_windows = self._base_loads
        self._system.set_loads(joined(base_points, self._points), joined(base_vectors, vectors),
                               joined(base_windows, windows))

    def adjust(self, stiffness: float | None = None, damping: float | None = None) -> None:
        """Change the material's stiffness or damping (Conditions' scales) from the next frame on.
        ValueError for a rigid body, which has neither, or a bad value."""
        if not self.deforms:
            raise ValueError("a rigid body has no stiffness or damping to adjust")
        changes = {k: v for k, v in (("stiffness", stiffness), ("damping", damping)) if v is not None}
        conditions = dataclasses.replace(self.conditions, **changes)
        conditions.check(len(self.body.vertices))
        kmap, report = self.body.kmap, self.body.report
        material = body_material(self.model.materials[report.category], report.category, conditions,
                                 self.body.vertices, self.body.faces, report.mass_at, Environment.contact_stiffness)
        kmap.omega2 = (2 * math.pi * material.frequency) ** 2
        kmap.yield_strain = material.yield_strain
        system = self._system  # its loads as they stand, so the acting points are attached once
        env = dataclasses.replace(system.env, damping=material.damping, load_points=system.load_points,
                                  load_vectors=system.load_vectors, load_windows=system.load_windows,
                                  **material.ground_contact(float(kmap.gyration)))
        self._system = LagrangianSystem(kmap, env)
        self._system.restore(system.snapshot())  # the colliders' planes carry on
        self.conditions, self.body.report.material = conditions, material
        self.run.use(self._system)

    def reset(self) -> None:
        """Back to frame 0 (the start's state and plastic rest shape), keeping the current material."""
        self.body.kmap.restore(self._start)
        self.run = self._new_run()


def live(vertices, faces, conditions: Conditions | None = None, model=None, points=None) -> LiveBody:
    """A ``LiveBody`` of one mesh (world space) under ``conditions``; the arguments of
    ``simulation.simulate``, whose frames ``step`` makes one at a time."""
    return LiveBody(prepare(vertices, faces, conditions, model, points), model)
