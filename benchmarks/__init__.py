"""Benchmarks: speed and accuracy tables, not tests. Each prints its tables and writes benchmarks/results/."""

import json
import platform
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def write_results(name: str, table: str, machine: str | None = None, **payload) -> None:
    """results/NAME.md (the table) and results/NAME.json (the machine and ``payload``)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"machine": machine or platform.platform(), **payload}, indent=1, default=str))
    (RESULTS / f"{name}.md").write_text(table + "\n")
