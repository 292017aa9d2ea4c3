"""The frame loop: substeps, chart changes, energy bookkeeping, divergence checks, progress."""

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .dynamics import LagrangianSystem
from .integrators import ADAPTIVE, advance

MIN_SUBSTEPS = 4
MAX_CHART_DRIFT = 1.0  # rad: recenter before the rotation vector gets this far from zero


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
    substeps: int  # integration steps per frame


def choose_substeps(system: LagrangianSystem, fps: float, method: str, q: torch.Tensor, q_dot: torch.Tensor) -> int:
    """Steps per frame: the stiffest spring (at rest and at the start) gets omega h <= 0.5 (adaptive
    methods choose their own steps inside), and no step moves the coordinates more than
    MAX_CHART_DRIFT within their chart."""
    if method in ADAPTIVE:
        return chart_substeps(system, fps, q_dot)
    return max(MIN_SUBSTEPS, chart_substeps(system, fps, q_dot), math.ceil(system.max_frequency(q) / (fps * 0.5)))


def chart_substeps(system: LagrangianSystem, fps: float, q_dot: torch.Tensor) -> int:
    """The fewest steps per frame that keep each step's move within the chart below MAX_CHART_DRIFT."""
    return max(1, math.ceil(system.map.chart_speed(q_dot) / (fps * MAX_CHART_DRIFT)))


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
) -> Trajectory:
    """Integrate frame by frame; frame 0 is the initial state.

    ``substeps`` overrides the automatic choice, but never goes below what keeps the chart valid.
    ``progress(done, total)`` is called after every frame; returning False cancels.
    """
    if substeps:
        substeps = max(substeps, chart_substeps(system, fps, q_dot0))
    else:
        substeps = choose_substeps(system, fps, method, q0, q_dot0)
    system.map.attach(output_points, output=True)
    dt = 1.0 / fps
    h = dt / substeps
    q, q_dot = q0, q_dot0
    work = torch.zeros(q.shape[0], dtype=q.dtype)
    dissipated = torch.zeros_like(work)
    rows = []

    def record():
        e = system.energies(q, q_dot)
        e["load_work"], e["dissipated"] = work, dissipated
        pts = system.map.embed(q, output_points).detach().to(torch.float32)
        pose = {k: v.detach().clone() for k, v in system.map.pose(q).items()}
        rows.append((q.detach().clone(), q_dot.detach().clone(), pts, {k: v.detach().clone() for k, v in e.items()}, pose))

    record()
    for frame in range(1, frames):
        drift = 0.0  # how far the coordinates have moved in their chart since the last recenter
        for sub in range(substeps):
            t0 = (frame - 1) * dt + sub * h
            system.set_interval(t0, t0 + h)
            q, q_dot, dw, dd = advance(system, q, q_dot, t0, t0 + h, method)
            work, dissipated = work + dw, dissipated + dd
            if not (torch.isfinite(q).all() and torch.isfinite(q_dot).all()):
                raise SimulationError(f"the simulation became non-finite between frames {frame - 1} and {frame}")
            drift += system.map.chart_speed(q_dot) * h
            if drift > MAX_CHART_DRIFT or sub == substeps - 1:
                q, q_dot = system.map.recenter(q, q_dot)
                drift = 0.0
        record()
        if progress is not None and progress(frame, frames - 1) is False:
            raise SimulationCancelled(f"cancelled at frame {frame} of {frames - 1}")

    energy = {k: torch.stack([r[3][k] for r in rows]).numpy() for k in rows[0][3]}
    energy["total"] = energy["kinetic"] + energy["potential"] + energy["gravity"] + energy["contact"]
    energy["balance"] = energy["total"] - energy["load_work"] + energy["dissipated"] - energy["total"][0]
    return Trajectory(
        times=np.arange(frames) * dt,
        coordinates=torch.stack([r[0] for r in rows]).numpy(),
        velocities=torch.stack([r[1] for r in rows]).numpy(),
        pose={k: torch.stack([r[4][k] for r in rows]).numpy() for k in rows[0][4]},
        points=torch.stack([r[2] for r in rows]).numpy(),
        energy=energy,
        substeps=substeps,
    )
