"""A jelly dropped onto another jelly's corner: where it ends, on top or tipped off.

    .venv/bin/python -m benchmarks.corner_drops

Two 0.3 m cubes as jellies (category elastic on the shipped model), Blender's 8-vertex one and the
same subdivided once and twice (26, 98 vertices), the upper dropped flat from 13, 15 and 17 cm
above the lower's top, past two of its edges so that its centre of mass lies 7, 6 or 5 cm inside
each; 48 frames at 24 fps on a ground at z = 0. A drop ends on top when the upper jelly's centre of
mass ends above 0.42 m (0.45 resting level; tipped off, it is below 0.3), with its tilt at the end.
The outcome is sensitive to the drop: the lower jelly's corner sinks under the landing and the upper
one bounces off that slope (docs/physics.md, "Several bodies"). Writes
benchmarks/results/corner_drops.{json,md}.
"""

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.resting_on_edges import box
from neurok_blender.core import Conditions, NeuROK, simulate_scene

SIDE, HEIGHTS, INSIDE = 0.3, (0.13, 0.15, 0.17), (0.07, 0.06, 0.05)


def drop(model, splits, inside, height):
    """(whether the upper jelly ends on top, its tilt at the end in degrees)."""
    jelly = Conditions(frames=48, ground_height=0.0, category="elastic")
    corner = SIDE / 2 - inside  # its centre of mass at SIDE - inside along x and y
    upper = box((SIDE,) * 3, (corner, corner, SIDE + height), splits)
    result = simulate_scene([(*box((SIDE,) * 3, (0.0, 0.0, 0.0), splits), jelly), (*upper, jelly)], model=model)
    tilt = np.degrees(np.arccos(np.clip(result[1].pose["rotation"][-1, 2, 2], -1.0, 1.0)))
    return bool(result[1].pose["translation"][-1, 2] > 0.42), float(tilt)


def main():
    torch.set_num_threads(1)
    model = NeuROK.load()
    rows = []
    for splits in range(3):
        row = {"vertices": len(box((SIDE,) * 3, (0, 0, 0), splits)[0]), "drops": {}}
        for inside in INSIDE:
            row["drops"][f"{inside:.2f}"] = [drop(model, splits, inside, h) for h in HEIGHTS]
        rows.append(row)
        print(row, flush=True)
    lines = ["| vertices | " + " | ".join(f"{100 * i:.0f} cm inside" for i in INSIDE) + " |",
             "|---:|" + "---:|" * len(INSIDE)]
    for row in rows:
        cells = []
        for inside in INSIDE:
            runs = row["drops"][f"{inside:.2f}"]
            tilts = ", ".join(f"{t:.0f}" for _, t in runs)
            cells.append(f"{sum(on for on, _ in runs)} of {len(runs)} ({tilts} deg)")
        lines.append(f"| {row['vertices']} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    write_results("corner_drops", text, rows=rows, heights_m=list(HEIGHTS))


if __name__ == "__main__":
    main()
