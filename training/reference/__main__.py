"""Simulate a mesh with a category's reference engine.

    python -m training.reference MESH.obj --category elastic [--frames 48] [--fps 24] [--ground 0]
           [--velocity X Y Z] [--angular-velocity X Y Z] [--mass KG] --out POSITIONS.npy

Writes world positions (frames, V, 3) float32 of the OBJ's vertices, in file order.
"""

import argparse
from pathlib import Path

import numpy as np

from neurok_blender.core import Conditions
from training.shapes.library import read_obj

from . import AVAILABLE, reference_simulate


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
