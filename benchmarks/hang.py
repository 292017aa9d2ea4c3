"""A cloth sheet pinned at two corners: whether the learned cloth hangs from them, and whether its coordinates could.

    .venv/bin/python -m benchmarks.hang [--weights W ...] [--directions K ...]      # about 1 min per weights

The scene pictures' sheet (0.8 m square, triangles of 6 cm, 1 m up) held at the two corners of one edge
by pins and let go flat from rest, 2 s at 24 fps; the reference is Blender Cloth with the same pins
(``training.reference.cloth``). At 1 s and 2 s, for each run: the swag, how far the held edge's middle
hangs below the pins (cloth folds and sags there without stretching), the far edge's drop below the pins
(0.8 m hanging straight down; a sheet that swings as a plate passes through it and back) and the edges'
strain (the 95th percentile of |length / rest length - 1|). Then what the model could reach: the sheet,
started hanging straight down as a plate, settled to the least of ``benchmarks.drape``'s energy with the
pins in place of the table,

    E = sum_i m_i g z_i + 1/2 omega^2 sum_i m_i |u_i|^2 + 1/2 k_s M mean_e (l_e / L_e - 1)^2
        + 1/2 k_p sum_p m_p |x_p - x_p0|^2  (+ the solver's wall on its coordinates)

(the engine's pin stiffness k_p, each pin holding an equal share m_p of the mass M at its place x_p0),
in the solver's coordinates, in the network's full latent and, with ``--directions``, on the network's
k leading active directions. Weights without calibrated materials run with the shipped ones. Writes
benchmarks/results/hang.{json,md}.
"""

import math
from pathlib import Path

import numpy as np
import torch

from benchmarks.deformation import with_materials
from benchmarks.drape import command_line, decoders, settle, settled_ways
from benchmarks.scene_pictures import scenes
from neurok_blender.core import NeuROK, simulate
from neurok_blender.core.checkpoint import read_checkpoint
from neurok_blender.core.dynamics import Environment
from training.evaluation import edge_strain

TIMES = (1.0, 2.0)  # s
HANGING = (math.pi / 2, 0.0, 0.0)  # the settles' start: the sheet turned about x, its held (+y) edge up


def scene():
    """The sheet (vertices, faces) and its conditions (pins at two corners of its +y edge)."""
    (v, f, conditions), = scenes()["a sheet pinned at two corners"][0]
    assert np.allclose(v[conditions.pins, 1], v[:, 1].max()), "HANGING turns the +y edge up"
    return v, f, conditions


def measured(rest, x, faces, pins) -> dict:
    """The swag and the far edge's drop (m) below the pins, and the edges' strain, of the shape ``x``."""
    held = rest[:, 1] > rest[:, 1].max() - 1e-6
    middle = held & (np.abs(rest[:, 0] - rest[pins, 0].mean()) < 0.07)
    far = rest[:, 1] < rest[:, 1].min() + 1e-6
    top = x[pins, 2].mean()
    return {"swag_m": float(top - x[middle, 2].mean()), "far_drop_m": float(top - x[far, 2].mean()),
            "strain": edge_strain(rest, x, faces)}


def pinned(mass: float, pins, places):
    """The pins (vertex indices) holding their points at ``places`` (P, 3): 1/2 k_p sum_p m_p |x_p - x_p0|^2
    (J), each an equal share of ``mass``."""
    places = torch.as_tensor(places, dtype=torch.float64)

    def support(x):
        return 0.5 * Environment.pin_stiffness * mass / len(pins) * ((x[pins] - places) ** 2).sum()
    return support


def reference(v, f, conditions) -> np.ndarray:
    """Blender Cloth's sheet at every frame (F, V, 3)."""
    from training.reference.cloth import simulate_cloth

    return simulate_cloth(v, f, conditions=conditions).positions.astype(np.float64)


def timed_rows(positions, v, f, pins, fps: float, run: str) -> list[dict]:
    """The measures of frames (F, V, 3) at TIMES."""
    return [{"run": f"{run} at {t:g} s", **measured(v, positions[round(t * fps)], f, pins)} for t in TIMES]


def reach(neurok: NeuROK, v, f, conditions, directions=()) -> list[dict]:
    """The settled sheets described above, each with its measures."""
    kmap, _, shapes, leading = decoders(neurok, v, f, conditions)
    support = pinned(conditions.mass, conditions.pins, v[conditions.pins])
    rows = []
    for name, (decode, start, wall) in settled_ways(kmap, shapes, leading, directions).items():
        sheet, norm = settle(decode, start, v, f, conditions.mass, kmap.omega2,
                             float(np.linalg.norm(conditions.gravity)), support, wall, turn=HANGING)
        rows.append({"run": f"settled: {name}", "latent_norm": norm, **measured(v, sheet, f, conditions.pins)})
    return rows


def evaluate(weights: list[str], directions=()) -> list[dict]:
    v, f, conditions = scene()
    rows = [{"weights": "", **row} for row in
            timed_rows(reference(v, f, conditions), v, f, conditions.pins, conditions.fps, "reference (Blender Cloth)")]
    print(*rows, sep="\n", flush=True)
    shipped = NeuROK.load()
    for w in weights:
        neurok = shipped if w == "shipped" else with_materials(Path(w), shipped.materials)
        label = w if w == "shipped" else f"{w} (step {read_checkpoint(w)['about']['steps']})"
        result = simulate(v, f, conditions, model=neurok)
        for row in timed_rows(result.positions, v, f, conditions.pins, conditions.fps, "rollout") \
                + reach(neurok, v, f, conditions, directions):
            rows.append({"weights": label, **row})
            print(rows[-1], flush=True)
    return rows


def markdown(rows) -> str:
    lines = ["| weights | run | swag | far edge's drop | edges' strain (95th percentile) | \\|s\\| |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        norm = f"{r['latent_norm']:.1f}" if "latent_norm" in r else ""
        lines.append(f"| {r['weights']} | {r['run']} | {1000 * r['swag_m']:.0f} mm | {1000 * r['far_drop_m']:.0f} mm | "
                     f"{100 * r['strain']:.1f} % | {norm} |")
    return "\n".join(lines)


def main():
    command_line(__doc__, "hang", evaluate, markdown)


if __name__ == "__main__":
    main()
