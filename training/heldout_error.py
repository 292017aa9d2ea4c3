"""The held-out figure a training run logs, for any weights: compare models on the same batch.

    .venv/bin/python -m training.heldout_error CORPUS WEIGHTS [WEIGHTS ...] [--split train] [--seed 0]

For each model file, the mean vertex error over the bounding-box diagonal of the posterior mean on
``training.train``'s validation batch of CORPUS (its 64 unaugmented frame pairs of the run's seed,
``train.validation_batch``), and of no deformation at all (the target frame left at rest); with
``--split train``, the same draw from the training sequences.
"""

import argparse
from pathlib import Path

import torch

from neurok_blender.core.checkpoint import load_model
from training.train import load_corpus, losses, validation_batch


def heldout_error(weights: Path, items, seed: int = 0) -> tuple[float, float]:
    """(the model's vertex error, no deformation's) on the validation batch of ``items``."""
    model = load_model(weights, "cpu")
    batch = validation_batch(model, items, seed, "cpu")
    with torch.no_grad():
        error = float(losses(model, batch)["vertex_error"])
    return error, float((batch["targets"] - batch["evaluation"]).norm(dim=-1).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("weights", type=Path, nargs="+")
    parser.add_argument("--split", choices=("heldout", "train"), default="heldout")
    parser.add_argument("--seed", type=int, default=0, help="the training run's seed, whose batch to draw")
    a = parser.parse_args()
    items = load_corpus(a.corpus, a.split)
    for weights in a.weights:
        error, still = heldout_error(weights, items, a.seed)
        print(f"{weights}: {error:.4f} of the diagonal (no deformation {still:.4f}) on {len(items)} {a.split} sequences")


if __name__ == "__main__":
    main()
