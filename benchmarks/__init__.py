"""Benchmarks: speed and accuracy tables, not tests. Each prints its tables and writes benchmarks/results/."""

import json
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def write_results(name: str, table: str, machine: str | None = None, **payload) -> None:
    """results/NAME.md (the table) and results/NAME.json (the machine and ``payload``)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"machine": machine or platform.platform(), **payload}, indent=1, default=str))
    (RESULTS / f"{name}.md").write_text(table + "\n")


def timed(work):
    """(what ``work()`` returned, the seconds it took)."""
    began = time.perf_counter()
    out = work()
    return out, time.perf_counter() - began


def results_name(stem: str, categories) -> str:
    """STEM for a run over every deformable category, else STEM_<its categories in their usual order>."""
    from neurok_blender.core.options import DEFORMABLE

    if set(categories) == set(DEFORMABLE):
        return stem
    return stem + "_" + "_".join(c for c in DEFORMABLE if c in categories)


_worker_neurok = None  # a pool process's own copy of the model (``load_worker_neurok``)


def load_worker_neurok(weights) -> None:
    """Pool initializer (``training.parent_watch.spawned_pool``): load the model once per process."""
    global _worker_neurok
    from neurok_blender.core import NeuROK

    _worker_neurok = NeuROK.load(weights)


def worker_neurok():
    """The model ``load_worker_neurok`` loaded in this pool process."""
    return _worker_neurok


def weights_label(weights: Path) -> str:
    """The weights' path from the working folder (the repository's root), or their name: no machine's path."""
    path = Path(weights).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else path.name
