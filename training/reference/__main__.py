"""Simulate a mesh with a category's reference engine.

    python -m training.reference MESH.obj --category elastic [--frames 48] [--fps 24] [--ground 0]
           [--velocity X Y Z] [--angular-velocity X Y Z] [--mass KG] --out POSITIONS.npy

Writes world positions (frames, V, 3) float32 of the OBJ's vertices, in file order.
"""

import argparse
from pathlib import Path

import numpy as np

from neurok_blender.core import Conditions

from . import AVAILABLE, reference_simulate


def read_obj(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and triangles of a Wavefront OBJ (polygons split into fans; texture and normal indices ignored)."""
    vertices, faces = [], []
    for line in path.read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "v":
            vertices.append([float(x) for x in parts[1:4]])
        elif parts[0] == "f":
            index = [int(token.split("/")[0]) for token in parts[1:]]
            index = [i - 1 if i > 0 else len(vertices) + i for i in index]
            faces += [[index[0], index[k], index[k + 1]] for k in range(1, len(index) - 1)]
    return np.asarray(vertices, dtype=np.float64).reshape(-1, 3), np.asarray(faces, dtype=np.int64).reshape(-1, 3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mesh", type=Path)
    parser.add_argument("--category", choices=AVAILABLE, required=True)
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--fps", type=float, default=24.0)
    parser.add_argument("--ground", type=float, default=None, help="ground height; no ground if omitted")
    parser.add_argument("--velocity", type=float, nargs=3, default=(0.0, 0.0, 0.0))
    parser.add_argument("--angular-velocity", type=float, nargs=3, default=(0.0, 0.0, 0.0))
    parser.add_argument("--mass", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    a = parser.parse_args(argv)
    vertices, faces = read_obj(a.mesh)
    conditions = Conditions(frames=a.frames, fps=a.fps, ground_height=a.ground, velocity=tuple(a.velocity),
                            angular_velocity=tuple(a.angular_velocity), mass=a.mass)
    positions = reference_simulate(vertices, faces, a.category, conditions=conditions)
    np.save(a.out, positions)
    print(f"{a.out}: {positions.shape[0]} frames of {positions.shape[1]} vertices")


if __name__ == "__main__":
    main()
