"""What the training examples' augmentation does to a pair of frames: the edges' strain and the shape
change it teaches, against the simulator's own.

    .venv/bin/python -m benchmarks.augmentation_strain CORPUS [--pairs 200]

On ``--pairs`` frame pairs of each category's held-out sequences of CORPUS, drawn as training draws
them (the second frame by its shape change): the 95th percentile over the mesh's edges of
| length in frame b / length in frame a - 1 | (``training.evaluation.edge_strain``), and the pair's
shape change (``training.evaluation.shape_error``: the mean vertex distance after the best rigid fit,
over the diagonal), three ways: as simulated; both frames stretched along the axes by e^s_i, s_i
uniform in [-1/4, 1/4], before frame b is moved back onto frame a (a stretch that meets the body's
turn); and as ``training.examples`` augments them (``augmentation`` after the fit). Medians over the
pairs. Writes benchmarks/results/augmentation_strain.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np

from benchmarks import write_results
from neurok_blender.core.mesh import bbox_diagonal
from training.evaluation import edge_strain, positive, shape_error
from training.examples import aligned, augmentation, draw_pair
from training.train import load_corpus

SEED = 0


def measure(corpus: Path, pairs: int) -> dict:
    """Per category, the medians of each way's edge strain and shape change (module docstring)."""
    by_category = {}
    for item in load_corpus(corpus, "heldout"):
        by_category.setdefault(item.sequence.category, []).append(item)
    rng = np.random.default_rng(SEED)
    results = {}
    for category, items in sorted(by_category.items()):
        rows = []
        for _ in range(pairs):
            item = items[int(rng.integers(len(items)))]
            s = item.sequence
            a, b = draw_pair(item, rng, "by-change")
            first, second = s.positions[a].astype(np.float64), s.positions[b].astype(np.float64)
            masses = s.masses.astype(np.float64)
            stretch = np.diag(np.exp(rng.uniform(-0.25, 0.25, 3)))
            transform = augmentation(category, rng)
            ways = {"simulated": (first, second), "stretched before the fit": (first @ stretch, second @ stretch),
                    "as augmented": (first @ transform.T, aligned(second, first, masses) @ transform.T)}
            rows.append({name: (edge_strain(x, y, s.faces), shape_error(y, x, bbox_diagonal(x)))
                         for name, (x, y) in ways.items()})
        results[category] = {name: {"edge_strain": float(np.median([r[name][0] for r in rows])),
                                    "shape_change": float(np.median([r[name][1] for r in rows]))}
                             for name in rows[0]} | {"pairs": pairs}
        print(category, results[category], flush=True)
    return results


def table(results: dict) -> str:
    ways = [k for k in next(iter(results.values())) if k != "pairs"]
    lines = ["| category | pairs | " + " | ".join(f"edge strain, {w}" for w in ways) + " | "
             + " | ".join(f"shape change, {w}" for w in ways) + " |", "|---|" + "---:|" * (1 + 2 * len(ways))]
    for category, row in results.items():
        lines.append(f"| {category} | {row['pairs']} | " + " | ".join(f"{100 * row[w]['edge_strain']:.1f} %" for w in ways)
                     + " | " + " | ".join(f"{row[w]['shape_change']:.4f}" for w in ways) + " |")
    return "\n".join(lines) + "\n\nMedians over the pairs; edge strain the 95th percentile over a pair's edges."


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a folder of held-out shards")
    parser.add_argument("--pairs", type=positive, default=200, help="frame pairs per category")
    a = parser.parse_args()
    results = measure(a.corpus, a.pairs)
    text = table(results)
    print(text)
    write_results("augmentation_strain", text, results=results)


if __name__ == "__main__":
    main()
