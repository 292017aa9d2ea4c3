"""Batch throughput: a folder of small assets through the command line, one file after another, in
local worker processes and as Ray tasks.

    .venv/bin/python -m benchmarks.batch_throughput [--assets 200] [--frames 24] [--runs serial two ray]

Writes ASSETS .obj files (Blender's primitives: cubes, spheres, cylinders, cones, tori, Suzanne and
grids, at seeded sizes and heights; category auto, so solids, sheets and their learned or rigid
motion mix as in a real batch) once, then times ``python -m neurok_blender simulate FOLDER --out OUT
--format glb --frames FRAMES`` per run in a fresh process, click to the last file written: start-up,
model loading and Ray's start included. Checks that every run's outputs are byte for byte those of
the serial run. Writes benchmarks/results/batch_throughput.{json,md}.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import write_results

RUNS = {"serial": [], "two": ["--workers", "2"], "ray": ["--ray"]}
LABELS = {"serial": "one after another", "two": "--workers 2", "ray": "--ray (local)"}

MAKE_ASSETS = """
import sys
import bpy
import numpy as np

folder, count = sys.argv[-2], int(sys.argv[-1])
rng = np.random.default_rng(0)
ops = bpy.ops.mesh
makers = [lambda s: ops.primitive_cube_add(size=s), lambda s: ops.primitive_uv_sphere_add(radius=s / 2),
          lambda s: ops.primitive_ico_sphere_add(radius=s / 2, subdivisions=3),
          lambda s: ops.primitive_cylinder_add(radius=s / 3, depth=s), lambda s: ops.primitive_cone_add(radius1=s / 2, depth=s),
          lambda s: ops.primitive_torus_add(major_radius=s / 2, minor_radius=s / 6), lambda s: ops.primitive_monkey_add(size=s),
          lambda s: ops.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=s)]
for index in range(count):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    size = float(rng.uniform(0.3, 1.5))
    makers[index % len(makers)](size)
    obj = bpy.context.active_object
    obj.location = (0.0, 0.0, float(rng.uniform(0.5, 2.0)) + size)
    obj.rotation_euler = tuple(float(a) for a in rng.uniform(-0.5, 0.5, 3))
    bpy.ops.wm.obj_export(filepath=f"{folder}/asset{index:04d}.obj", export_selected_objects=True, export_materials=False)
"""


def make_assets(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if len(list(folder.glob("*.obj"))) == count:
        return
    subprocess.run([sys.executable, "-c", MAKE_ASSETS, str(folder), str(count)], check=True, capture_output=True)


def run(name: str, inputs: Path, out: Path, frames: int) -> dict:
    command = [sys.executable, "-m", "neurok_blender", "simulate", str(inputs), "--out", str(out), "--format", "glb",
               "--frames", str(frames), "--overwrite", *RUNS[name]]
    began = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parents[1])
    seconds = time.perf_counter() - began
    summary = [line for line in finished.stdout.splitlines() if line.startswith("NeuROK:")]
    written = sorted(out.glob("*.glb"))
    print(f"{name}: {len(written)} files in {seconds:.1f} s; {summary[-1] if summary else finished.stderr[-2000:]}",
          flush=True)
    return {"run": name, "seconds": seconds, "files": len(written), "status": finished.returncode,
            "files_per_minute": len(written) / seconds * 60}


def table(rows: list[dict], assets: int, frames: int, cores: int) -> str:
    serial = next(r for r in rows if r["run"] == "serial")
    lines = [f"{assets} small assets (Blender primitives, category auto), {frames} frames each, to .glb; "
             f"{cores} cores, one solver thread per process; click to last file, start-up included.", "",
             "| run | files written | seconds | files/minute | vs one after another | outputs equal to serial |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {LABELS[r['run']]} | {r['files']} | {r['seconds']:.1f} | {r['files_per_minute']:.1f} | "
                     f"{serial['seconds'] / r['seconds']:.2f}x | {r.get('equal', 'reference')} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=int, default=200)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--folder", type=Path, default=None, help="where the assets and outputs go (default: a temp dir)")
    a = parser.parse_args()
    if "serial" not in a.runs:
        parser.error("the serial run is the reference the others are checked against")
    with tempfile.TemporaryDirectory() as temporary:
        folder = a.folder or Path(temporary)
        make_assets(folder / "assets", a.assets)
        rows = [run(name, folder / "assets", folder / name, a.frames) for name in a.runs]
        reference = {p.name: p.read_bytes() for p in (folder / "serial").glob("*.glb")}
        for row in rows[1:]:
            outputs = {p.name: p.read_bytes() for p in (folder / row["run"]).glob("*.glb")}
            row["equal"] = "yes" if outputs == reference else \
                f"no: {sum(outputs.get(k) != v for k, v in reference.items())} of {len(reference)} differ"
    text = table(rows, a.assets, a.frames, len(os.sched_getaffinity(0)))
    print(text)
    write_results("batch_throughput", text, rows=rows, assets=a.assets, frames=a.frames)


if __name__ == "__main__":
    main()
