"""How much the decoder stretches the surface where the references do not: the local strain of its
shapes against the targets', and what the skinning itself can hold.

    .venv/bin/python -m benchmarks.decoded_strain CORPUS [--weights W ...] [--examples 48] [--queries 128 256 512]
                                                      [--tag T]

On ``--examples`` frame pairs of each category's held-out sequences of CORPUS (drawn as training draws
them, unaugmented, the second frame by its shape change), the last MEASURED of the 1,024 evaluation
points each make pairs with their NEIGHBOURS nearest in the first frame; a pair's strain is
| |y_j - y_i| / |x_j - x_i| - 1 |. Rows: the target's (the reference's own), the target's motion
carried by the skinning from N of the other evaluation points as query points (their exact motion,
each query's rotation the best fit to its neighbours' translations: the least strain skinning from N
queries leaves), and the decoded shape of the posterior mean for each weights. Medians and 95th
percentiles; the 95th takes in pairs across a fold or two parts, which the target strains too.
Writes benchmarks/results/decoded_strain{_TAG}.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from benchmarks import weights_label, write_results
from neurok_blender.core.checkpoint import load_model
from neurok_blender.core.neurok import WEIGHTS
from neurok_blender.core.skinning import deform, skinning
from training.evaluation import positive
from training.examples import EVALUATION_POINTS
from training.train import batch_tensors, draw_batch, load_corpus

MEASURED = 512  # evaluation points whose pairs are measured; the others can serve as query points
NEIGHBOURS = 6  # pairs per measured point
FITTED = 8  # neighbouring queries a query's rotation is fitted to
SEED = 5


def nearest(points: torch.Tensor, count: int) -> torch.Tensor:
    """Each point's ``count`` nearest others (B, N, count) in points (B, N, 3)."""
    distance = torch.cdist(points, points)
    distance.diagonal(dim1=1, dim2=2).fill_(torch.inf)
    return distance.topk(count, largest=False).indices


def gathered(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """values (B, N, 3) at index (B, N, k) -> (B, N, k, 3)."""
    b, n, k = index.shape
    return torch.gather(values, 1, index.reshape(b, n * k, 1).expand(-1, -1, 3)).reshape(b, n, k, 3)


def pair_strain(rest: torch.Tensor, shape: torch.Tensor, pairs: torch.Tensor) -> np.ndarray:
    """| |y_j - y_i| / |x_j - x_i| - 1 | over the pairs (every point i with its ``pairs`` j), flattened."""
    length = lambda p: (gathered(p, pairs) - p[:, :, None]).norm(dim=-1)
    return (length(shape) / length(rest) - 1.0).abs().flatten().numpy()


def fitted_rotations(queries: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
    """Each query's rotation vector (B, Q, 3): the rotation that best carries its FITTED nearest
    queries' offsets onto their displaced ones (Kabsch, reflections excluded)."""
    near = nearest(queries, FITTED)
    moved = queries + displacement
    before = gathered(queries, near) - queries[:, :, None]
    after = gathered(moved, near) - moved[:, :, None]
    u, _, vh = torch.linalg.svd(before.transpose(-1, -2) @ after)
    flip = torch.linalg.det(vh.transpose(-1, -2) @ u.transpose(-1, -2))
    signs = torch.stack([torch.ones_like(flip), torch.ones_like(flip), flip], -1)
    rotation = vh.transpose(-1, -2) @ torch.diag_embed(signs) @ u.transpose(-1, -2)
    return torch.from_numpy(Rotation.from_matrix(rotation.reshape(-1, 3, 3).numpy()).as_rotvec()).reshape(queries.shape)


def skinned_target(rest: torch.Tensor, target: torch.Tensor, count: int) -> torch.Tensor:
    """The target's motion at the first ``count`` points carried by the skinning to the last MEASURED."""
    queries, points = rest[:, :count], rest[:, -MEASURED:]
    displacement = target[:, :count] - queries
    rotation = fitted_rotations(queries, displacement)
    return torch.stack([deform(queries[e], rotation[e], displacement[e], points[e],
                               skinning(points[e].numpy(), queries[e].numpy())) for e in range(len(rest))])


def decoded(model, t: dict) -> torch.Tensor:
    """The posterior mean's shape at the evaluation points (B, N, 3)."""
    with torch.no_grad():
        _, tokens = model.prior(t["features"])
        mean, _ = model.posterior(t["features"], t["deformation"])
        return model.deform(mean, tokens, t["query_features"], t["queries"], t["evaluation"], t["skin"])


def summary(strain: np.ndarray) -> dict:
    return {"median": float(np.median(strain)), "p95": float(np.percentile(strain, 95))}


def measure(corpus: Path, weights: list[Path], examples: int, counts: list[int]) -> dict:
    """Per category: the target's strain, the skinned target's from each count of queries, each
    weights' decoded strain (``summary``)."""
    by_category = {}
    for item in load_corpus(corpus, "heldout"):
        by_category.setdefault(item.sequence.category, []).append(item)
    models = {weights_label(w): load_model(w, "cpu") for w in weights}
    first = next(iter(models.values()))
    results = {}
    for category, items in sorted(by_category.items()):
        batch = draw_batch(items, SEED, 0, range(examples), first.config, augment=False, pairs="by-change")
        rest = torch.as_tensor(batch["evaluation"], dtype=torch.float64)
        target = torch.as_tensor(batch["targets"], dtype=torch.float64)
        measured = rest[:, -MEASURED:]
        pairs = nearest(measured, NEIGHBOURS)
        row = {"examples": examples, "target": summary(pair_strain(measured, target[:, -MEASURED:], pairs)),
               "skinned": {str(n): summary(pair_strain(measured, skinned_target(rest, target, n), pairs)) for n in counts}}
        row["decoded"] = {name: summary(pair_strain(measured, decoded(model, batch_tensors(model, batch, "cpu"))[:, -MEASURED:]
                                                    .double(), pairs)) for name, model in models.items()}
        results[category] = row
        print(category, row, flush=True)
    return results


def table(results: dict, counts: list[int]) -> str:
    names = list(next(iter(results.values()))["decoded"])
    cell = lambda s: f"{100 * s['median']:.1f} / {100 * s['p95']:.0f} %"
    lines = ["| category | target | " + " | ".join(f"skinned from {n} queries" for n in counts) + " | "
             + " | ".join(f"decoded: {n}" for n in names) + " |",
             "|---|" + "---:|" * (1 + len(counts) + len(names))]
    for category, row in results.items():
        lines.append(f"| {category} | {cell(row['target'])} | " + " | ".join(cell(row["skinned"][str(n)]) for n in counts)
                     + " | " + " | ".join(cell(row["decoded"][n]) for n in names) + " |")
    return "\n".join(lines) + "\n\nPair strain, median / 95th percentile."


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a folder of held-out shards")
    parser.add_argument("--weights", type=Path, nargs="+", default=[WEIGHTS])
    parser.add_argument("--examples", type=positive, default=48, help="frame pairs per category")
    parser.add_argument("--queries", type=positive, nargs="+", default=[128, 256, 512],
                        help="query counts the skinned target is carried from (at most 512)")
    parser.add_argument("--tag", default=None, help="results as decoded_strain_TAG (a run kept beside the others)")
    a = parser.parse_args()
    if max(a.queries) > EVALUATION_POINTS - MEASURED:
        parser.error(f"--queries: at most {EVALUATION_POINTS - MEASURED} (the evaluation points not measured)")
    results = measure(a.corpus, a.weights, a.examples, a.queries)
    text = table(results, a.queries)
    print(text)
    write_results("decoded_strain" + (f"_{a.tag}" if a.tag else ""), text, results=results)


if __name__ == "__main__":
    main()
