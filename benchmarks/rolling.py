"""Round rigid bodies on the ground: how far a ball rolls, where a dropped ball comes to rest, and
whether a rocking egg keeps its energy books.

    .venv/bin/python -m benchmarks.rolling

Rigid UV spheres of radius 0.3 m (about 1k, 10k and 100k vertices) roll on their support point
(dynamics ``_place_support``). Rolling: set rolling at 2 m/s without slipping, 49 frames at 24 fps;
the speed of the centre after 0.5, 1 and 2 s against a ball slowed by its rolling resistance alone,
2 - (5/7) g a / r t (lever a). Dropped: from 0.2 m at three random turns, 96 frames; how far the
centre strays sideways, how deep the lowest vertex ends, whether it sleeps. Eggs (the 10k ball
stretched 1.5 and 2 times along one axis) dropped at a random turn rock on their side: the energy
balance at the end over the energy of the drop (its kinetic energy at the first contact). One solver
thread. Writes benchmarks/results/rolling.{json,md}.
"""

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from benchmarks import timed, write_results
from neurok_blender.core import Conditions, simulate
from neurok_blender.core.dynamics import SUPPORT_ROLLING
from neurok_blender.core.mesh import bbox_diagonal, convex_hull
from training.shapes.solids import uv_sphere

RADIUS, SPEED, G = 0.3, 2.0, 9.81
SIZES = {"1k": (22, 45), "10k": (70, 143), "100k": (223, 448)}
TURNS = (1, 2, 3)  # seeds of the dropped balls' random turns


def ball(rings, segments):
    v, f = uv_sphere(rings, segments)
    return RADIUS * v, f


def rolled(v, f):
    """Speeds (m/s) of the centre after 0.5, 1 and 2 s, the rolling resistance's alone, steps, seconds."""
    start = v + [0.0, 0.0, RADIUS]
    conditions = Conditions(frames=49, ground_height=0.0, category="rigid", friction=0.5,
                            velocity=(SPEED, 0.0, 0.0), angular_velocity=(0.0, SPEED / RADIUS, 0.0))
    result, seconds = timed(lambda: simulate(start, f, conditions))
    speed = np.linalg.norm(np.diff(result.positions.mean(1)[:, :2], axis=0), axis=1) * 24
    lever = SUPPORT_ROLLING * bbox_diagonal(start[convex_hull(start).indices])
    alone = SPEED - 5 / 7 * G * lever / RADIUS * 2.0
    return [float(speed[i]) for i in (11, 23, 47)], alone, result.steps, seconds


def dropped(v, f, seed):
    """Sideways stray (m), final depth of the lowest vertex (m, positive: below the ground), asleep."""
    turned = v @ Rotation.random(random_state=seed).as_matrix().T
    turned = turned + [0.0, 0.0, 0.2 - turned[:, 2].min()]
    result = simulate(turned, f, Conditions(frames=96, ground_height=0.0, category="rigid"))
    centre = result.positions.mean(1)
    return (float(np.linalg.norm(centre[-1, :2] - centre[0, :2])), float(-result.positions[-1, :, 2].min()),
            result.asleep_frames > 0)


def rocked(v, f, stretch):
    """The egg's energy balance at the end over its kinetic energy at the first contact."""
    egg = (v * [stretch, 1.0, 1.0]) @ Rotation.random(random_state=3).as_matrix().T
    egg = egg + [0.0, 0.0, 0.3 - egg[:, 2].min()]
    result = simulate(egg, f, Conditions(frames=120, ground_height=0.0, category="rigid"))
    return float(result.energy["balance"][-1] / result.energy["kinetic"].max()), result.asleep_frames > 0


def main():
    torch.set_num_threads(1)
    rows = []
    for name, (rings, segments) in SIZES.items():
        v, f = ball(rings, segments)
        speeds, alone, steps, seconds = rolled(v, f)
        drops = [dropped(v, f, seed) for seed in TURNS]
        row = {"ball": name, "vertices": len(v), "speed_s": speeds, "resistance_alone_2s": alone, "steps": steps,
               "seconds": seconds, "drop_stray_m": max(d[0] for d in drops), "drop_depth_m": max(d[1] for d in drops),
               "drops_asleep": sum(d[2] for d in drops)}
        rows.append(row)
        print(row, flush=True)
    v, f = ball(*SIZES["10k"])
    eggs = {stretch: rocked(v, f, stretch) for stretch in (1.5, 2.0)}
    print(eggs, flush=True)
    lines = ["| ball | vertices | speed at 0.5 / 1 / 2 s | resistance alone at 2 s | steps | time | "
             "dropped: stray, depth (worst of 3) | asleep |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['ball']} | {r['vertices']} | {' / '.join(f'{s:.2f}' for s in r['speed_s'])} m/s | "
                     f"{r['resistance_alone_2s']:.2f} m/s | {r['steps']} | {r['seconds']:.1f} s | "
                     f"{1000 * r['drop_stray_m']:.1f} mm, {1000 * r['drop_depth_m']:.1f} mm | "
                     f"{r['drops_asleep']} of {len(TURNS)} |")
    lines += ["", "| egg (10k ball stretched) | energy balance at 5 s / kinetic energy at impact | asleep |",
              "|---|---:|---:|"]
    lines += [f"| {stretch} x | {100 * balance:+.1f} % | {'yes' if asleep else 'no'} |"
              for stretch, (balance, asleep) in eggs.items()]
    text = "\n".join(lines)
    print(text)
    write_results("rolling", text, rows=rows, eggs={str(k): list(e) for k, e in eggs.items()})


if __name__ == "__main__":
    main()
