"""Neural rollouts against the reference simulators on held-out shapes and conditions.

    .venv/bin/python -m benchmarks.neural_fidelity CORPUS [--weights W] [--per-category 6]
                                                   [--categories continuum ...] [--jobs 2]
    .venv/bin/python -m benchmarks.neural_fidelity --redraw [--categories continuum ...]
    .venv/bin/python -m benchmarks.neural_fidelity CORPUS --pictures-only [--categories continuum ...]

Each held-out sequence (a shape never trained on, its reference simulator's run) is replayed with
the same rest mesh, conditions and material (as stiffness, damping and plasticity scales) by:
- neural: the learned coordinates with the Euler-Lagrange equation (the product's default);
- rigid only: the same engine without deformation coordinates;
- initial conditions only: the neural solver as in the paper's setting, without the pushes and
  without the ground and obstacles (velocities and pull-and-release still apply);
- no Lagrangian: the same latent space without the equation of motion (the rigid solver's pose, the
  latent relaxing from the pull as a free damped oscillation).
Reported per category and overall: mean vertex error over the bounding-box diagonal at 0.5 s, 1 s
and 2 s, and Chamfer-L1 (shapes in diagonal units) at 2 s, each over the sequences every variant
finished (a failed run is counted, and its sequence left out of every mean), and the paired difference
neural minus rigid only at 2 s with its standard error and how often neural is the closer. A cloth
run's obstacles are colliders (``training.corpus.conditions.conditions_of``). Writes benchmarks/results/neural_fidelity.{json,md},
a plot of the error over time, neural_fidelity.png, and PICTURES/side_by_side_<category>.jpg: the
first three held-out sequences of each category, reference frames at 0, 0.5, 1 and 2 s above the
neural ones. With ``--categories`` (a closer look at some, with more sequences) it writes
neural_fidelity_<categories>.{json,md,png} and no pictures; ``--redraw`` writes a stored result's
table and plot again without replaying; ``--pictures-only`` renders the pictures alone.
"""

import argparse
import dataclasses
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from benchmarks import RESULTS, load_worker_neurok, results_name, worker_neurok, write_results
from neurok_blender.core import NeuROK, SimulationError
from neurok_blender.core.options import DEFORMABLE
from neurok_blender.core.fitting import chamfer_l1
from neurok_blender.core.initial import pulled_coordinates
from neurok_blender.core.simulation import simulate
from neurok_blender.core.trajectory import OUTPUT
from training.evaluation import (diagonal, errors_over_time, frame_at, pick_sequences, positive, replay_conditions,
                                 shape_error)
from training.parent_watch import spawned_pool

TIMES = (0.5, 1.0, 2.0)  # s
VARIANTS = ("neural", "rigid only", "initial conditions only", "no Lagrangian")
SHAPE_VARIANTS = ("neural", "rigid only")  # the shape error column: what the deformation adds
CONTACT_ABLATION = "rigid, neural contact"  # benchmarks/contact_ablation.py
FLOOR = 1e-4  # plotted errors start here: at frame 0 they are zero
PICTURED = 3  # held-out sequences per category in the side-by-side pictures


def replay(neurok: NeuROK, sequence, variant: str) -> np.ndarray:
    if variant == CONTACT_ABLATION:
        return rigid_with_neural_contact(neurok, sequence)
    changes = {}
    if variant == "rigid only":
        changes.update(category="rigid", pull=None)
    if variant == "initial conditions only":
        changes.update(forces=[], ground_height=None, colliders=[])
    conditions = replay_conditions(sequence, **changes)
    vertices = sequence.rest_vertices.astype(np.float64)
    if variant == "no Lagrangian":
        return without_equation_of_motion(neurok, vertices, sequence.faces, conditions)
    return neurok.simulate(vertices, sequence.faces, conditions).positions


def without_equation_of_motion(neurok: NeuROK, vertices, faces, conditions) -> np.ndarray:
    """The same latent space without the Euler-Lagrange equation: the rigid solver moves the body and
    the latent relaxes from where the pull put it as a free damped oscillation at the material's
    frequency, s(t) = s0 exp(-d t / 2) cos(omega_d t), blind to contact, forces and spin."""
    rigid = neurok.simulate(vertices, faces, dataclasses.replace(conditions, category="rigid", pull=None))
    kmap, report = neurok.body(vertices, faces, conditions, conditions.category)
    if kmap is None:  # no deformation coordinate: the rigid motion is all there is
        return rigid.positions
    start = kmap.rest_coordinates()
    if conditions.pull is not None:
        start, _ = pulled_coordinates(kmap, vertices[np.asarray(conditions.pull.vertices)],
                                      np.asarray(conditions.pull.displacement, dtype=np.float64))
    points = torch.as_tensor(vertices)[None]
    kmap.attach(OUTPUT, points, parts=kmap.shape.vertex_parts, output=True)
    omega, rate = 2 * np.pi * report.material.frequency, report.material.damping / 2
    damped = np.sqrt(max(omega**2 - rate**2, 0.0))
    center = rigid.pose["translation"][0]  # frame 0 is the rest pose: its centre of mass
    frames = []
    for t, p, rotation in zip(rigid.times, rigid.pose["translation"], rigid.pose["rotation"]):
        s = start[:, 6:] * float(np.exp(-rate * t) * np.cos(damped * t))
        with torch.no_grad():
            shape = kmap.deformed(s, OUTPUT)[0].numpy()
        frames.append(p + (shape - center) @ rotation.T)
    return np.asarray(frames, dtype=np.float32)


def rigid_with_neural_contact(neurok: NeuROK, sequence) -> np.ndarray:
    """The sequence's replay as a rigid body that meets the ground as the neural solver's body does
    (``BodyMaterial.ground_contact``; benchmarks/contact_ablation.py)."""
    conditions = replay_conditions(sequence)
    vertices = sequence.rest_vertices.astype(np.float64)
    kmap, report = neurok.body(vertices, sequence.faces, conditions, sequence.category)
    contact = report.material.ground_contact(None if kmap is None else float(kmap.gyration))
    return simulate(vertices, sequence.faces, dataclasses.replace(conditions, category="rigid", pull=None),
                    contact=contact).positions


def evaluate(weights, corpus: Path, per_category: int, categories=DEFORMABLE, jobs: int = 1,
             variants=VARIANTS) -> list[dict]:
    """A row per held-out sequence, in order; with ``jobs`` > 1 the sequences spread over that many
    processes, each with its own copy of the model on one thread."""
    picked = [sequence for category, sequences in pick_sequences(corpus, "heldout", per_category, spread=1).items()
              if category in categories for sequence in sequences]
    if jobs == 1:
        neurok = NeuROK.load(weights)
        return [sequence_row(neurok, sequence, variants) for sequence in picked]
    with spawned_pool(jobs, load_worker_neurok, weights) as pool:
        return list(pool.map(_pooled_row, [(sequence, variants) for sequence in picked]))


def sequence_row(neurok: NeuROK, sequence, variants=VARIANTS) -> dict:
    """Every variant's replay of one sequence, scored; a variant that goes non-finite keeps its error."""
    row = {"category": sequence.category, "shape": sequence.shape, "seed": sequence.seed, "fps": sequence.fps}
    for variant in variants:
        began = time.perf_counter()
        try:
            positions = replay(neurok, sequence, variant)
        except SimulationError as error:
            row[variant] = {"error": str(error)}
            continue
        row[variant] = {"over_time": errors_over_time(positions, sequence).tolist(),
                        "chamfer_2s": chamfer_at(positions, sequence, 2.0),
                        "shape_2s": shape_error_at(positions, sequence, 2.0),
                        "seconds": time.perf_counter() - began}
    print(sequence.category, sequence.shape, {v: error_at(row[v], 2.0, sequence.fps) for v in variants}, flush=True)
    return row


def _pooled_row(job) -> dict:
    return sequence_row(worker_neurok(), *job)


def chamfer_at(positions: np.ndarray, sequence, t: float) -> float:
    """Chamfer-L1 between solver and reference vertices at time t, in units of the diagonal."""
    frame = frame_at(t, sequence.fps, len(positions))
    size = diagonal(sequence)
    a = torch.as_tensor(positions[frame], dtype=torch.float64) / size
    b = torch.as_tensor(sequence.positions[frame], dtype=torch.float64) / size
    return float(chamfer_l1(a, b))


def shape_error_at(positions: np.ndarray, sequence, t: float) -> float:
    """``shape_error`` at time t."""
    frame = frame_at(t, sequence.fps, len(positions))
    return shape_error(positions[frame], sequence.positions[frame], diagonal(sequence))


def error_at(result: dict, t: float, fps: float):
    """A variant's error at time t (its ``over_time`` series), None where it failed."""
    if "over_time" not in result:
        return None
    series = result["over_time"]
    return series[frame_at(t, fps, len(series))]


def by_category(rows: list[dict], variants) -> list[tuple[str, list[dict], list[dict]]]:
    """(category, its rows, those every one of ``variants`` finished) per category and for all: the
    means compare the variants on the same sequences."""
    groups = defaultdict(list)
    for row in rows:
        groups[row["category"]].append(row)
    groups["all"] = rows
    return [(c, group, [r for r in group if all("over_time" in r[v] for v in variants)]) for c, group in groups.items()]


def mean_errors(rows: list[dict], variants) -> list[str]:
    """Table cells: each variant's mean error over ``rows`` at each of TIMES."""
    return [f"{np.mean([error_at(r[v], t, r['fps']) for r in rows]):.4f}" if rows else "-"
            for v in variants for t in TIMES]


def table(rows: list[dict]) -> str:
    header = "| category | sequences | " + " | ".join(
        f"{v}: {t} s" for v in VARIANTS for t in TIMES) + " | neural Chamfer-L1 at 2 s | " + " | ".join(
        f"{v}: shape at 2 s" for v in SHAPE_VARIANTS) + (
        " | neural - rigid only at 2 s | neural closer at 2 s | failed runs |")
    lines = [header, "|---|---:|" + "---:|" * (len(VARIANTS) * len(TIMES) + len(SHAPE_VARIANTS) + 4)]
    for category, group, complete in by_category(rows, VARIANTS):
        cells = mean_errors(complete, VARIANTS)
        chamfer = [r["neural"]["chamfer_2s"] for r in complete]
        failed = sum("error" in r[v] for r in group for v in VARIANTS)
        chamfer_cell = f"{np.mean(chamfer):.4f}" if chamfer else "-"
        shape_cells = [f"{np.mean([r[v]['shape_2s'] for r in complete]):.4f}" if complete else "-" for v in SHAPE_VARIANTS]
        lines.append(f"| {category} | {len(complete)} of {len(group)} | " + " | ".join(cells) + f" | {chamfer_cell} | "
                     + " | ".join(shape_cells) + f" | {paired_difference(complete, 'neural', 'rigid only', 2.0)} | {failed} |")
    return "\n".join(lines)


def paired_difference(rows: list[dict], first: str, second: str, t: float) -> str:
    """``first`` minus ``second`` at t on the same sequences, as mean +- its standard error, and on how
    many ``first`` is the closer: chaotic landings spread single sequences widely (0.04-2.8 of the
    diagonal at 2 s on the continuum), so a difference of means needs its error bar to mean anything."""
    if not rows:
        return "- | -"
    difference = np.array([error_at(r[first], t, r["fps"]) - error_at(r[second], t, r["fps"]) for r in rows])
    spread = f"{difference.std(ddof=1) / np.sqrt(len(rows)):.4f}" if len(rows) > 1 else "-"
    return f"{difference.mean():+.4f} +- {spread} | {int((difference < 0).sum())} of {len(rows)}"


def plot(rows: list[dict], destination: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    categories = [c for c in DEFORMABLE if any(r["category"] == c for r in rows)]
    figure, axes = plt.subplots(1, len(categories), figsize=(4 * len(categories), 3.2), sharey=True)
    for axis, category in zip(np.atleast_1d(axes), categories):
        for variant in VARIANTS:
            series = [r[variant]["over_time"] for r in rows if r["category"] == category and "over_time" in r[variant]]
            if series:
                length = min(len(s) for s in series)
                mean = np.mean([s[:length] for s in series], 0)
                fps = next(r["fps"] for r in rows if r["category"] == category)
                axis.plot(np.arange(length) / fps, np.maximum(mean, FLOOR), label=variant)
        axis.set_title(category)
        axis.set_xlabel("time (s)")
        axis.set_yscale("log")  # the paper's setting falls forever: on a linear axis it hides the rest
    np.atleast_1d(axes)[0].set_ylabel("mean vertex error / diagonal")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(destination, dpi=90)


def side_by_side(weights, corpus: Path, folder: Path, categories, times=(0.0, 0.5, 1.0, 2.0)) -> list[Path]:
    """A picture per category of its first ``PICTURED`` held-out sequences: for each, the reference's
    frames above the neural ones, each time's two framed alike, so where the body went shows as well
    as its shape."""
    from tools.build_extension import isolate_user_folders
    from tools.stage import mesh_sheet

    isolate_user_folders()
    neurok = NeuROK.load(weights)
    written = []
    for category, sequences in pick_sequences(corpus, "heldout", PICTURED, spread=1).items():
        if category not in categories:
            continue
        states, framings = [], []
        for sequence in sequences:
            neural = replay(neurok, sequence, "neural")
            frames = [frame_at(t, sequence.fps, len(neural)) for t in times]
            for positions in (sequence.positions, neural):
                states += [([(positions[f].astype(np.float64), sequence.faces)], ()) for f in frames]
            framings += 2 * [np.concatenate([sequence.positions[f], neural[f]]).astype(np.float64) for f in frames]
        written.append(folder / f"side_by_side_{category}.jpg")
        mesh_sheet(states, written[-1], columns=len(times), framings=framings)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", help="the corpus to replay (not with --redraw)")
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=6)
    parser.add_argument("--pictures", type=Path, default=Path("docs/neural"))
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE),
                        help="only these, written apart (neural_fidelity_<categories>) and without pictures")
    parser.add_argument("--jobs", type=positive, default=1, help="processes replaying sequences at once")
    parser.add_argument("--redraw", action="store_true",
                        help="replay nothing: the table and plot again from the stored rows of these categories")
    parser.add_argument("--pictures-only", action="store_true",
                        help="no table: the side-by-side pictures of these categories alone")
    a = parser.parse_args()
    every = set(a.categories) == set(DEFORMABLE)
    name = results_name("neural_fidelity", a.categories)
    if a.redraw:
        if a.corpus is not None:
            parser.error("--redraw replays nothing: leave the corpus out")
        stored = json.loads((RESULTS / f"{name}.json").read_text())
        rows = stored.pop("rows")
        text = table(rows)
        print(text)
        write_results(name, text, rows=rows, **stored)
        plot(rows, RESULTS / f"{name}.png")
        return
    if a.corpus is None:
        parser.error("the corpus to replay is missing")
    if every or a.pictures_only:
        pictures = side_by_side(a.weights, a.corpus, a.pictures, a.categories)
        print("side by side:", *map(str, pictures))
    if a.pictures_only:
        return
    rows = evaluate(a.weights, a.corpus, a.per_category, a.categories, a.jobs)
    text = table(rows)
    print(text)
    write_results(name, text, rows=rows, corpus=a.corpus.name)
    plot(rows, RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
