"""Frame rate of live mode: a body stepped one frame at a time while it is pushed (``core.LiveBody``).

    .venv/bin/python -m benchmarks.live_rate [--sizes 1000 10000 100000] [--frames 48]

The speed benchmark's elastic UV spheres (``neural_speed.sphere``) dropped on the ground at 24 fps:
seconds to start live mode (the body built as Simulate builds it), then ``frames`` steps, a third of
them with a force held on one surface point as a mouse drag holds it, and the frames per second
they ran at; the first frame of a new grab is timed apart (its point is attached to the learned
coordinates). Live needs about 30 frames/s to feel live. One torch thread, as Blender's interface
leaves the rest to itself. Writes benchmarks/results/live_rate.{json,md}.
"""

import argparse
import time

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.neural_speed import sphere
from neurok_blender.core import Conditions, Force, NeuROK


def measure(neurok: NeuROK, vertices: int, frames: int) -> dict:
    v, f = sphere(vertices)
    began = time.perf_counter()
    body = neurok.live(v, f, Conditions(ground_height=0.0, category="elastic"))
    start = time.perf_counter() - began
    grabbed = v[np.argmax(v[:, 0])]  # the sphere's side: a push sideways and up
    push = Force((6.0, 0.0, 6.0), point=tuple(grabbed))
    steps, grab = [], None
    for frame in range(frames):
        forces = [push] if frames // 3 <= frame < 2 * frames // 3 else []
        began = time.perf_counter()
        positions = body.step(forces)
        seconds = time.perf_counter() - began
        if frame == frames // 3:
            grab = seconds
        else:
            steps.append(seconds)
    return {"vertices": len(v), "start_s": start, "grab_s": grab, "step_s": float(np.mean(steps)),
            "frames_per_s": 1.0 / float(np.mean(steps)), "substeps": body.run.substeps,
            "finite": bool(np.isfinite(positions).all())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default=None, help="default: the shipped weights")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--frames", type=int, default=48)
    a = parser.parse_args()
    torch.set_num_threads(1)
    neurok = NeuROK.load(a.weights)
    neurok.live(*sphere(500), Conditions(category="elastic")).step()  # first calls of torch kernels: not timed
    rows = []
    for size in a.sizes:
        rows.append(measure(neurok, size, a.frames))
        print(rows[-1], flush=True)
    lines = ["| vertices | start (s) | first frame of a grab (s) | frame (ms) | frames/s | steps/frame |",
             "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['vertices']} | {r['start_s']:.1f} | {r['grab_s']:.2f} | {1e3 * r['step_s']:.0f} | "
              f"{r['frames_per_s']:.1f} | {r['substeps']} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    write_results("live_rate", text, threads=torch.get_num_threads(), frames=a.frames, rows=rows)


if __name__ == "__main__":
    main()
