"""Why a stack of jellies leans: the same five-jelly stack at fixed steps a frame, and stacks of
unequal jellies.

    .venv/bin/python -m benchmarks.stack_lean        # about 3 min on one core

The stack of ``benchmarks.scene_cost`` (five 0.3 m jellies, 386 vertices, elastic on the shipped
model, dropped from rest with 0.1 m between them, 48 frames at 24 fps), a symmetric scene that should
not lean: once with the steps the rollout chooses and once at each of STEPS steps a frame throughout;
then the stack with the jellies' sides alternately 0.3 and 0.26 m, and shrinking from 0.3 to 0.22 m
up the stack (the same 0.1 m gaps, each centred over the one below), where no edge of one jelly
meets an edge of the next. The lean is ``scene_cost.lean``: how far the top jelly's centre strays
sideways. Writes benchmarks/results/stack_lean.{json,md}.
"""

import torch

from benchmarks import timed, write_results
from benchmarks.scene_cost import FRAMES, SIZE, jelly_box, lean
from neurok_blender.core import Conditions, NeuROK, simulate_scene

STEPS = (5, 7, 10, 20)  # a frame, fixed
GAP = 0.1  # m between the jellies as they start
SIDES = {"equal": (SIZE,) * 5, "alternating": (SIZE, 0.26) * 2 + (SIZE,), "shrinking": (SIZE, 0.28, 0.26, 0.24, 0.22)}


def stack(sides, conditions: Conditions) -> list:
    """Jellies of ``sides`` (m) from the ground up, centred on one vertical line, as (vertices, faces,
    conditions)."""
    bodies, bottom = [], 0.05
    for side in sides:
        bodies.append((*jelly_box((-side / 2, -side / 2, bottom), side), conditions))
        bottom += side + GAP
    return bodies


def main():
    torch.set_num_threads(1)
    model = NeuROK.load()
    rows = []
    runs = [("equal", "chosen", None)] + [("equal", steps, steps) for steps in STEPS] + \
        [(name, "chosen", None) for name in SIDES if name != "equal"]
    for name, label, substeps in runs:
        conditions = Conditions(frames=FRAMES, ground_height=0.0, category="elastic", substeps=substeps)
        results, seconds = timed(lambda: simulate_scene(stack(SIDES[name], conditions), model=model))
        rows.append({"sides": name, "steps": label, "lean_m": lean(results), "seconds": seconds})
        print(rows[-1], flush=True)
    lines = ["| jellies | steps a frame | top's lean | seconds |", "|---|---|---:|---:|"]
    lines += [f"| {r['sides']} | {r['steps']} | {1000 * r['lean_m']:.1f} mm | {r['seconds']:.1f} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    write_results("stack_lean", text, rows=rows)


if __name__ == "__main__":
    main()
