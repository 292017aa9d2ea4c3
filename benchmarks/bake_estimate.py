"""The bake estimate against bakes: what ``api.estimate_object`` tells the artist before a bake, and
what the bake then takes.

    .venv/bin/python -m benchmarks.bake_estimate

Blender ico spheres (subdivisions 7 and 8: 40,962 and 163,842 vertices) and UV spheres of about
1k and 10k vertices, dropped from 1 m onto the ground, baked as shape keys through ``api.simulate_object``
on one solver thread, each in a fresh process: the seconds from the call to the keys, and the peak
resident memory above the scene's before the call (``ru_maxrss``). Sleep at rest is off, so a body
that settles is still integrated, as the estimate assumes. Writes benchmarks/results/bake_estimate.{json,md}.
"""

import json
import subprocess
import sys

from benchmarks import write_results

CASES = [("uv", 1_000, 24, "rigid"), ("uv", 10_000, 24, "rigid"), ("ico", 7, 24, "rigid"), ("ico", 8, 24, "rigid"),
         ("ico", 8, 96, "rigid"), ("uv", 1_000, 120, "elastic"), ("uv", 10_000, 120, "elastic"), ("ico", 7, 24, "elastic"),
         ("ico", 8, 24, "elastic")]

BAKE = """
import json, resource, sys, time
import bpy
from neurok_blender import api, register
from neurok_blender.preferences import SolverOptions

kind, size, frames, category = sys.argv[-4], int(sys.argv[-3]), int(sys.argv[-2]), sys.argv[-1]
register()
bpy.ops.wm.read_factory_settings(use_empty=True)
if kind == "ico":
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=size, radius=0.5, location=(0, 0, 1.5))
else:
    rings = round((size / 2) ** 0.5)
    bpy.ops.mesh.primitive_uv_sphere_add(segments=2 * rings, ring_count=rings, radius=0.5, location=(0, 0, 1.5))
obj = bpy.context.active_object
s = obj.neurok
s.category, s.frame_start, s.frame_end, s.use_ground, s.ground_height, s.sleep = category, 1, frames, True, 0.0, False
told = api.estimate_object(obj)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
began = time.perf_counter()
api.simulate_object(obj, options=SolverOptions(threads=1))
seconds = time.perf_counter() - began
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"vertices": len(obj.data.vertices), "frames": frames, "category": category, "seconds": seconds,
                  "bytes": peak - before, "estimated_seconds": told.seconds, "estimated_bytes": told.bytes}))
"""


def table(rows: list[dict]) -> str:
    lines = ["| vertices | frames | category | seconds | estimated | ratio | memory above the scene | estimated | ratio |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['vertices']:,} | {r['frames']} | {r['category']} | {r['seconds']:.1f} | "
                     f"{r['estimated_seconds']:.1f} | {r['estimated_seconds'] / r['seconds']:.2f} | "
                     f"{r['bytes'] / 2**20:,.0f} MB | {r['estimated_bytes'] / 2**20:,.0f} MB | "
                     f"{r['estimated_bytes'] / max(r['bytes'], 1):.2f} |")
    return "\n".join(lines)


def main():
    rows = []
    for kind, size, frames, category in CASES:
        run = subprocess.run([sys.executable, "-c", BAKE, kind, str(size), str(frames), category],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    text = table(rows)
    print(text)
    write_results("bake_estimate", text, rows=rows)


if __name__ == "__main__":
    main()
