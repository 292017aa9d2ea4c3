"""Check a generated corpus against physics and render a contact sheet per category.

    python -m training.validate CORPUS [--pictures docs/corpus] [--per-category 6]

Prints, per category: sequences, shapes, simulation throughput and the share passing each check;
writes the table to PICTURES/validation.md and PICTURES/<category>.jpg (Cycles, CPU, small).
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from tools.build_extension import isolate_user_folders
from tools.stage import mesh_sheet
from training.corpus.shards import read_shard

# A check passes when its value is at most this (booleans: must be True).
LIMITS = {"penetration": 0.01, "pivot_gap": 1e-6, "energy_rise": 0.01, "volume_error": 0.15, "finite": True,
          "solver_warnings": 0, "part_overlap": 0.005, "hold_gap": 0.005, "hold_speed": 0.002,
          "strain_p99": 0.1, "inside_obstacles": 0.01}
SHEET_FRAMES = (0, 15, 30, 59)


def table(rows: list[dict]) -> str:
    by_category = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row)
    checks = sorted({k for row in rows for k in row["checks"]} & set(LIMITS))
    lines = ["| category | train | held-out | shapes | simulated sequences / hour (1 core) | "
             + " | ".join(f"{c} ok" for c in checks) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(checks)]
    for category, group in sorted(by_category.items()):
        seconds = sum(r["checks"].get("seconds", 0.0) for r in group)
        cells = []
        for check in checks:
            values = [r["checks"][check] for r in group if check in r["checks"]]
            ok = [v is True if LIMITS[check] is True else v <= LIMITS[check] for v in values]
            cells.append(f"{np.mean(ok):.1%} of {len(values)}" if values else "-")
        lines.append(f"| {category} | {sum(r['split'] == 'train' for r in group)} | "
                     f"{sum(r['split'] == 'heldout' for r in group)} | {len({r['shape'] for r in group})} | "
                     f"{len(group) / seconds * 3600:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_sheet(corpus: Path, rows: list[dict], destination: Path, count: int, seed: int = 0):
    """Rows of ``count`` random sequences, columns at SHEET_FRAMES."""
    picked = [rows[i] for i in np.random.default_rng(seed).choice(len(rows), min(count, len(rows)), replace=False)]
    states = []
    for row in picked:
        sequence = read_shard(corpus / row["shard"])[row["index"]]
        states += [([(sequence.positions[frame].astype(np.float64), sequence.faces)],
                    sequence.conditions.get("obstacles", [])) for frame in SHEET_FRAMES]
    mesh_sheet(states, destination, columns=len(SHEET_FRAMES))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--pictures", type=Path, default=Path("docs/corpus"))
    parser.add_argument("--per-category", type=int, default=6)
    a = parser.parse_args()
    rows = [json.loads(line) for line in (a.corpus / "manifest.jsonl").read_text().splitlines()]
    text = table(rows)
    print(text)
    a.pictures.mkdir(parents=True, exist_ok=True)
    (a.pictures / "validation.md").write_text(text + "\n")
    isolate_user_folders()  # before bpy is first imported by render_sheet
    for category in sorted({r["category"] for r in rows}):
        sheet = a.pictures / f"{category}.jpg"
        render_sheet(a.corpus, [r for r in rows if r["category"] == category], sheet, a.per_category)
        print(f"contact sheet: {sheet}")


if __name__ == "__main__":
    main()
