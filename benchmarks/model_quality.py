"""How well the learned coordinates cover held-out shapes: reconstruction, pose fitting, ablations, latent grid.

    .venv/bin/python -m benchmarks.model_quality CORPUS [--weights W] [--displacement-weights W2]
                                                        [--per-category 12] [--pictures docs/model]

On held-out sequences (shapes never trained on), per category, the last frame is the target:
- reconstruction: the posterior's mean for the target's deformation, decoded; mean vertex error over
  the bounding-box diagonal (the target moved rigidly back onto frame 0 first: rigid motion is the
  solver's own coordinates, not the model's);
- pose fitting (the paper's inverse kinematics, its Table 1): reduced coordinates and rigid pose
  fitted to the target's vertices by Chamfer-L1 on shapes in units of the bounding-box diagonal,
  against the same fit with the rigid pose only (no deformation), with the full latent (no model
  reduction), and with the plain-displacement model if given; IoU where the mesh is closed;
- the same fit on the solver's own coordinates (``NeuROK.body``'s map of the rest frame, at the
  sequence's mass: its subspace, mirror blocks and quadratic expansion) held inside its wall
  (``neural.wall_radius``), as far as any rollout can take the shape.
Writes benchmarks/results/model_quality.{json,md} and a latent-grid contact sheet PICTURES/latent.jpg.
"""

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.deformation import with_materials
from neurok_blender.core import NeuROK
from neurok_blender.core.checkpoint import load_model
from neurok_blender.core.fitting import fit_pose, latent_decoder
from neurok_blender.core.mesh import is_closed, winding_number
from neurok_blender.core.model import prepare_shape, shape_tensors
from neurok_blender.core.reduction import active_subspace
from neurok_blender.core.trajectory import OUTPUT
from training.corpus.shards import read_shard
from training.evaluation import replay_conditions
from training.examples import rigid_alignment

IOU_SAMPLES = 4096
GRID = np.linspace(-2.0, 2.0, 5)  # reduced coordinates s0, s1 of the latent grid (prior std units)


def heldout(corpus: Path, per_category: int) -> list:
    chosen = defaultdict(list)
    for path in sorted(corpus.glob("*-heldout-*.npz")):
        for sequence in read_shard(path):
            if len(chosen[sequence.category]) < per_category:
                chosen[sequence.category].append(sequence)
    if not chosen:
        raise ValueError(f"no held-out sequences in {corpus}")
    return [s for group in chosen.values() for s in group]


class Object:
    """A held-out sequence's frame 0 prepared for one model."""

    def __init__(self, model, sequence):
        self.sequence = sequence
        rest = sequence.positions[0].astype(np.float64)
        self.shape = prepare_shape(rest, sequence.faces, model.config, parts=sequence.part_ids)
        self.features, self.query_features, self.queries = shape_tensors(model, self.shape)
        with torch.no_grad():
            self.prior_mean, self.tokens = model.prior(self.features)
        self.subspace = active_subspace(model, self.prior_mean, self.tokens, self.query_features)
        self.points = torch.as_tensor(self.shape.vertices, dtype=torch.float32)
        target = sequence.positions[-1].astype(np.float64)
        rotation, shift = rigid_alignment(target, rest, sequence.masses.astype(np.float64))
        self.aligned = torch.as_tensor(self.shape.to_model(target @ rotation.T + shift), dtype=torch.float32)
        self.target = torch.as_tensor(self.shape.to_model(target), dtype=torch.float32)

    def decode(self, model, latent):
        with torch.no_grad():
            return model.deform(latent, self.tokens, self.query_features, self.queries, self.points, self.shape.skin)

    def reconstruction_error(self, model) -> float:
        deformation = self.shape.samples.interpolate(self.aligned.numpy().astype(np.float64), self.shape.faces)
        deformation = torch.as_tensor(deformation - self.shape.samples.points, dtype=torch.float32)
        with torch.no_grad():
            mean, _ = model.posterior(self.features, deformation)
        return float((self.decode(model, mean) - self.aligned).norm(dim=-1).mean())

    def fit(self, model, variant="reduced", steps=200):
        # "rigid only": a subspace with no directions, so only the pose moves
        chosen = {"reduced": self.subspace, "full": None, "rigid only": _frozen(self.subspace)}[variant]
        decode = latent_decoder(model, self.prior_mean, self.tokens, self.query_features, self.queries, self.points,
                                self.shape.skin, chosen)
        start = torch.zeros(self.prior_mean.shape if chosen is None else (chosen.size,))
        return fit_pose(decode, start, self.target, steps=steps)

    def solver_fit(self, model, neurok: NeuROK, steps=200):
        """(the fit on the solver's own coordinates inside its wall, their number)."""
        rest = self.sequence.positions[0].astype(np.float64)
        conditions = replay_conditions(self.sequence)
        kmap, _ = neurok.body(rest, self.sequence.faces, conditions, conditions.category)
        if kmap is None:  # no coordinates: the body lands rigidly
            return self.fit(model, "rigid only", steps), 0
        kmap.attach(OUTPUT, torch.as_tensor(rest)[None], parts=kmap.shape.vertex_parts, output=True)
        center = torch.as_tensor(self.shape.center)

        def decode(s):  # y(s) at the vertices, model units
            return ((kmap.deformed(s[None], OUTPUT)[0] - center) / self.shape.scale).float()

        start = torch.zeros(kmap.reduced_size, dtype=torch.float64)
        return fit_pose(decode, start, self.target, radius=kmap.wall_radius, steps=steps), kmap.reduced_size

    def iou(self, fitted) -> float | None:
        faces = self.sequence.faces
        if not is_closed(faces):
            return None
        a, b = fitted.numpy().astype(np.float64), self.target.numpy().astype(np.float64)
        low, high = np.minimum(a.min(0), b.min(0)), np.maximum(a.max(0), b.max(0))
        probes = np.random.default_rng(0).uniform(low, high, size=(IOU_SAMPLES, 3))
        inside_a, inside_b = (np.abs(winding_number(probes, m, faces)) > 0.5 for m in (a, b))
        return float((inside_a & inside_b).sum() / max((inside_a | inside_b).sum(), 1))


def _frozen(subspace):
    """A subspace with no directions: the fit moves the rigid pose only."""
    return type(subspace)(subspace.basis[:0], subspace.eigenvalues)


def evaluate(weights: Path, corpus: Path, per_category: int, variants=("reduced", "full", "rigid only"),
             solver: bool = True) -> dict:
    model = load_model(weights, "cpu")
    neurok = with_materials(weights, NeuROK.load().materials) if solver else None  # its maps, not their materials
    rows = []
    for sequence in heldout(corpus, per_category):
        began = time.perf_counter()
        obj = Object(model, sequence)
        row = {"category": sequence.category, "shape": sequence.shape, "k_q": obj.subspace.size,
               "reconstruction": obj.reconstruction_error(model)}
        for variant in variants:
            fit = obj.fit(model, variant)
            row[f"chamfer {variant}"] = fit.chamfer
            row[f"iou {variant}"] = obj.iou(fit.points)
        if solver:
            fit, row["solver k"] = obj.solver_fit(model, neurok)
            row["chamfer solver"], row["iou solver"] = fit.chamfer, obj.iou(fit.points)
        row["seconds"] = time.perf_counter() - began
        rows.append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return {"weights": str(weights), "about": torch.load(weights, weights_only=True)["about"], "rows": rows}


def table(results: dict, ablation: dict | None) -> str:
    by = defaultdict(list)
    for row in results["rows"]:
        by[row["category"]].append(row)
    by["all"] = results["rows"]
    columns = ["reconstruction", "chamfer reduced", "iou reduced", "chamfer full", "chamfer rigid only", "k_q",
               "chamfer solver", "iou solver", "solver k"]
    lines = ["| category | sequences | " + " | ".join(columns) + (" | displacement model: reconstruction, chamfer |" if ablation else " |"),
             "|---|---:|" + "---:|" * len(columns) + ("---:|" if ablation else "")]
    ablation_by = defaultdict(list)
    for row in (ablation or {}).get("rows", []):
        ablation_by[row["category"]].append(row)
        ablation_by["all"].append(row)
    for category, group in by.items():
        cells = []
        for c in columns:
            values = [r[c] for r in group if r.get(c) is not None]
            counts = c in ("k_q", "solver k")
            cells.append(f"{np.mean(values):.1f}" if values and counts else f"{np.mean(values):.4f}" if values else "-")
        extra = ""
        if ablation:
            other = ablation_by[category]
            extra = f" {np.mean([r['reconstruction'] for r in other]):.4f}, {np.mean([r['chamfer reduced'] for r in other]):.4f} |"
        lines.append(f"| {category} | {len(group)} | " + " | ".join(cells) + " |" + extra)
    return "\n".join(lines)


def latent_grid(weights: Path, corpus: Path, destination: Path, categories=("articulated", "cloth", "elastic")):
    """Decode a 5 x 5 grid over the two leading reduced coordinates of one held-out shape per category."""
    from tools.build_extension import isolate_user_folders
    from tools.stage import mesh_sheet

    isolate_user_folders()
    model = load_model(weights, "cpu")
    picked = {}
    for sequence in heldout(corpus, 1_000_000):
        if sequence.category in categories and sequence.category not in picked:
            picked[sequence.category] = sequence
    states = []
    for category in categories:
        if category not in picked:
            continue
        obj = Object(model, picked[category])
        for s1 in GRID:
            for s0 in GRID:
                s = torch.zeros(obj.subspace.size)
                s[0] = s0
                if obj.subspace.size > 1:
                    s[1] = s1
                points = obj.decode(model, obj.subspace.latent(obj.prior_mean, s)).numpy().astype(np.float64)
                states.append(([(obj.shape.to_world(points), obj.shape.faces)], ()))
    mesh_sheet(states, destination, columns=len(GRID))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--weights", type=Path, default=Path("neurok_blender/weights/neurok.pt"))
    parser.add_argument("--displacement-weights", type=Path, default=None)
    parser.add_argument("--per-category", type=int, default=12)
    parser.add_argument("--pictures", type=Path, default=Path("docs/model"))
    a = parser.parse_args()
    torch.manual_seed(0)
    results = evaluate(a.weights, a.corpus, a.per_category)
    ablation = evaluate(a.displacement_weights, a.corpus, a.per_category, ("reduced",), solver=False) \
        if a.displacement_weights else None
    text = table(results, ablation)
    print(text)
    write_results("model_quality", text, results=results, displacement=ablation)
    latent_grid(a.weights, a.corpus, a.pictures / "latent.jpg")
    print(f"latent grid: {a.pictures / 'latent.jpg'}")


if __name__ == "__main__":
    main()
