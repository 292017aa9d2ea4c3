"""A million vertices to a point cache: time and peak memory, click to file.

    .venv/bin/python -m benchmarks.million [--vertices 1000000] [--frames 120]

The speed benchmark's elastic UV sphere (``neural_speed.sphere``) at about a million vertices,
dropped on the ground for 120 frames at 24 fps, simulated by the core and written as the PC2 file a
Point Cache bake writes (``point_cache.write_pc2``), in a fresh process per size so that its peak
resident memory (``ru_maxrss``) is this run's. One torch thread. Writes
benchmarks/results/million.{json,md}.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import write_results


def run_one(vertices: int, frames: int) -> dict:
    """In this process: build, roll out and write the cache; seconds per phase and the peak memory."""
    import resource

    import torch

    from benchmarks.neural_speed import sphere
    from neurok_blender.core import Conditions, NeuROK
    from neurok_blender.point_cache import write_pc2

    torch.set_num_threads(1)
    v, f = sphere(vertices)
    neurok = NeuROK.load()
    conditions = Conditions(frames=frames, fps=24.0, ground_height=0.0, category="elastic")
    began = time.perf_counter()
    result = neurok.simulate(v, f, conditions)
    simulated = time.perf_counter() - began
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        write_pc2(Path(folder) / "million.pc2", result.positions)
        written = time.perf_counter() - began
    return {"vertices": len(v), "frames": frames, "simulate_s": simulated, "write_s": written,
            "total_s": simulated + written, "substeps": result.substeps,
            "peak_memory_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "positions_gb": result.positions.nbytes / 2**30}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, nargs="+", default=[1000000])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.child:
        print(json.dumps(run_one(a.vertices[0], a.frames)))
        return
    rows = []
    for vertices in a.vertices:
        run = subprocess.run([sys.executable, "-m", "benchmarks.million", "--child", "--vertices", str(vertices),
                              "--frames", str(a.frames)], capture_output=True, text=True, check=True)
        rows.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    lines = ["| vertices | frames | simulate (s) | write PC2 (s) | total (s) | steps/frame | peak memory (GB) | positions (GB) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['vertices']} | {r['frames']} | {r['simulate_s']:.1f} | {r['write_s']:.1f} | {r['total_s']:.1f} | "
              f"{r['substeps']} | {r['peak_memory_gb']:.1f} | {r['positions_gb']:.2f} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    write_results("million", text, rows=rows)


if __name__ == "__main__":
    main()
