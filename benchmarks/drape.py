"""A cloth sheet dropped on a table: whether the learned cloth drapes, and whether its coordinates could.

    .venv/bin/python -m benchmarks.drape [--weights W ...]        # about 2 min per weights

A 1 m square sheet (triangles of 6 cm) dropped from 0.7 m onto a 0.6 m square table 0.5 m high (a
collider, friction 0.6, thickness 1 cm), 2 s at 24 fps. The reference is Blender Cloth
(``training.reference.cloth``). At 2 s, for each run: the top's sag, the deepest any vertex over the
table's middle (0.5 m square) lies below the table's top plus its thickness (the aim: within 5 mm), and
the overhang's drop, how far the vertices that started more than 0.1 m past the edge lie below those
over the middle (the medians' difference; hanging straight down they drop by their distance past the
edge): a shape sunk or tilted as a whole does not count as draped. Then what the model could
reach: the reference's shape at 2 s fitted (``fitting.fit_pose``, chamfer-L1 with the rigid pose free)
with the solver's own coordinates inside its wall (``neural.wall_radius``: what any rollout can reach),
with the same coordinates free, and with the network's full latent (what the model represents), each
fit's chamfer (over the bounding-box diagonal) and overhang's drop. Weights without calibrated
materials run with the shipped ones. Writes benchmarks/results/drape.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.deformation import with_materials
from benchmarks.scene_pictures import sheet
from neurok_blender.core import Collider, Conditions, NeuROK, simulate
from neurok_blender.core.checkpoint import read_checkpoint
from neurok_blender.core.fitting import fit_pose, latent_decoder
from neurok_blender.core.mesh import box_mesh
from neurok_blender.core.model import prepare_shape, shape_tensors
from neurok_blender.core.trajectory import OUTPUT

TABLE, TOP, THICKNESS = 0.6, 0.5, 0.01  # m: the table's side, its top's height, the collider's thickness
FRAMES, FPS = 49, 24
FIT_STEPS = 400


def scene():
    """The sheet (vertices, faces), the table (vertices, faces) and the run's conditions."""
    v, f = sheet(1.0, 0.7)
    table = box_mesh((TABLE, TABLE, TOP), (-TABLE / 2, -TABLE / 2, 0.0))
    conditions = Conditions(frames=FRAMES, fps=FPS, ground_height=0.0, category="cloth",
                            colliders=[Collider(*table, friction=0.6, thickness=THICKNESS, name="table")])
    return v, f, table, conditions


def regions(rest):
    """Masks of the vertices over the table's middle and of those more than 0.1 m past its edge."""
    reach = np.abs(rest[:, :2]).max(1)
    return reach < TABLE / 2 - 0.05, reach > TABLE / 2 + 0.1


def measured(rest, last) -> dict:
    """The top's sag and the overhang's drop (m) of the shape ``last``."""
    middle, overhang = regions(rest)
    return {"top_sag_m": float(max(0.0, TOP + THICKNESS - last[middle, 2].min())),
            "overhang_drop_m": float(np.median(last[middle, 2]) - np.median(last[overhang, 2]))}


def reference(v, f, table) -> np.ndarray:
    """Blender Cloth's sheet at 2 s (V, 3)."""
    from training.reference.cloth import simulate_cloth

    run = simulate_cloth(v, f, conditions=Conditions(frames=FRAMES, fps=FPS, ground_height=0.0), colliders=[table])
    return run.positions[-1].astype(np.float64)


def reach(neurok: NeuROK, v, f, conditions, target) -> list[dict]:
    """The fits of ``target`` (V, 3, world) described above, each with its measures."""
    shape = prepare_shape(v, f, neurok.model.config)
    goal = torch.as_tensor(shape.to_model(target), dtype=torch.float32)
    kmap, _ = neurok.body(v, f, conditions, "cloth")
    kmap.attach(OUTPUT, torch.as_tensor(v)[None], output=True)
    center = torch.as_tensor(shape.center)

    def solver(s):  # the solver's map at the vertices, model units
        return ((kmap.deformed(s[None], OUTPUT)[0] - center) / shape.scale).float()

    with torch.no_grad():
        features, query_features, queries = shape_tensors(neurok.model, shape)
        prior_mean, tokens = neurok.model.prior(features)
    network = latent_decoder(neurok.model, prior_mean, tokens, query_features, queries,
                             torch.as_tensor(shape.vertices, dtype=torch.float32), shape.skin)
    rest = torch.zeros(kmap.reduced_size, dtype=torch.float64)  # s at the rest shape
    k = kmap.reduced_size
    fits = {f"solver's {k} coordinates, inside the wall ({kmap.wall_radius:.1f})": (solver, rest, kmap.wall_radius),
            f"solver's {k} coordinates, free": (solver, rest, None),
            f"network's full latent ({prior_mean.numel()}), free": (network, torch.zeros_like(prior_mean), None)}
    rows = []
    for name, (decode, start, radius) in fits.items():
        fit = fit_pose(decode, start, goal, radius=radius, steps=FIT_STEPS)
        rows.append({"run": f"fit: {name}", "chamfer": fit.chamfer, "latent_norm": float(fit.coordinates.norm()),
                     **measured(v, shape.to_world(fit.points.numpy().astype(np.float64)))})
    return rows


def evaluate(weights: list[str]) -> list[dict]:
    v, f, table, conditions = scene()
    target = reference(v, f, table)
    rows = [{"weights": "", "run": "reference (Blender Cloth)", **measured(v, target)}]
    print(rows[-1], flush=True)
    shipped = NeuROK.load()
    for w in weights:
        neurok = shipped if w == "shipped" else with_materials(Path(w), shipped.materials)
        label = w if w == "shipped" else f"{w} (step {read_checkpoint(w)['about']['steps']})"
        result = simulate(v, f, conditions, model=neurok)
        rows.append({"weights": label, "run": "rollout", "finite": bool(np.isfinite(result.positions).all()),
                     **measured(v, result.positions[-1].astype(np.float64))})
        print(rows[-1], flush=True)
        for row in reach(neurok, v, f, conditions, target):
            rows.append({"weights": label, **row})
            print(rows[-1], flush=True)
    return rows


def markdown(rows) -> str:
    lines = ["| weights | run | top's sag | overhang's drop | chamfer (of the diagonal) | fitted \\|s\\| |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        chamfer = f"{r['chamfer']:.4f}" if "chamfer" in r else ""
        norm = f"{r['latent_norm']:.1f}" if "latent_norm" in r else ""
        lines.append(f"| {r['weights']} | {r['run']} | {1000 * r['top_sag_m']:.1f} mm | "
                     f"{1000 * r['overhang_drop_m']:.0f} mm | {chamfer} | {norm} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", nargs="+", default=["shipped"], help="checkpoints, or 'shipped'")
    a = parser.parse_args()
    torch.set_num_threads(1)
    rows = evaluate(a.weights)
    text = markdown(rows)
    print(text)
    write_results("drape", text, rows=rows)


if __name__ == "__main__":
    main()
