"""How many CPU threads the solver should take: its time with 1 and with every core, on an idle
machine and on one where another program keeps one core busy.

    .venv/bin/python -m benchmarks.solver_threads [--frames 24] [--sizes 1000 10000]

Each case runs in a fresh process (torch fixes its thread pool at the first operation): a UV
sphere of radius 0.3 m, elastic, dropped onto the ground for ``--frames`` frames at 24 fps, build
and rollout timed together. "Busy" starts a pure-Python busy loop before the timed run, as a
render, a second Blender or a browser would hold a core. Writes benchmarks/results/solver_threads.{json,md}.
"""

import argparse
import json
import os
import subprocess
import sys

from benchmarks import write_results

CASE = """
import json, sys, time, torch
torch.set_num_threads({threads})
from benchmarks.neural_speed import sphere
from neurok_blender.core import Conditions, NeuROK
model = NeuROK.load()
v, f = sphere({vertices})
began = time.perf_counter()
model.simulate(v, f, Conditions(frames={frames}, fps=24.0, ground_height=0.0, category="elastic"))
print(json.dumps(time.perf_counter() - began))
"""


def timed(threads: int, vertices: int, frames: int, busy: bool) -> float:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        code = CASE.format(threads=threads, vertices=vertices, frames=frames)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    a = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    rows = []
    for vertices in a.sizes:
        for busy in (False, True):
            seconds = {n: timed(n, vertices, a.frames, busy) for n in sorted({1, cores})}
            rows.append({"vertices": vertices, "busy": busy, "seconds": seconds})
            print(rows[-1], flush=True)
    header = " | ".join(f"{n} thread{'s' * (n > 1)} (s)" for n in sorted({1, cores}))
    lines = [f"| vertices | another program on a core | {header} |", "|---:|---|" + "---:|" * len({1, cores})]
    for row in rows:
        cells = " | ".join(f"{s:.1f}" for s in row["seconds"].values())
        lines.append(f"| {row['vertices']} | {'yes' if row['busy'] else 'no'} | {cells} |")
    table = "\n".join(lines)
    print(table)
    write_results("solver_threads", table, cores=cores, frames=a.frames, rows=rows)


if __name__ == "__main__":
    main()
