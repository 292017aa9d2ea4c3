"""Cloth sequences: a sheet or open shell dropped or thrown onto the ground and simple obstacles, or
hanging from pins (a corner, two corners, an edge) over them."""

import time

import numpy as np

from neurok_blender.core import Conditions
from training.reference.cloth import ClothMaterial, simulate_cloth
from training.shapes.geometry import axis_rotation
from training.shapes.sheets import random_cloth

from .conditions import FPS, FRAMES, describe, nudged, obstacle_mesh, random_orientation
from .sequence import HELDOUT_SHAPES, SPLIT_STREAM, Sequence

GENERATOR = "cloth-blender-3"  # 2: frame 0 is the rest mesh when thrown (the run-up ends there); 3: hanging from pins
HANGING = 0.35  # share of the sequences that hang from pins
HOLDS = ("corner", "two corners", "edge")
EDGE_BAND = 0.05  # of the sheet's span: the vertices an edge hold takes, from its outermost one in
INSIDE_TOLERANCE = 0.002  # m: a vertex deeper than this inside an obstacle counts as passing into it


def sample_cloth(seed: int, split: str, nudge: float = 0.0) -> Sequence:
    """Sequence ``seed`` of ``split``, deterministic: shape, pose, obstacles, throw and material from the seed;
    ``nudge`` adds that much initial velocity along x (``conditions.nudged``)."""
    rng = np.random.default_rng([seed, SPLIT_STREAM[split]])
    shape_seed = int(rng.integers(0, HELDOUT_SHAPES)) + (HELDOUT_SHAPES if split == "heldout" else 0)
    vertices, faces = random_cloth(np.random.default_rng(shape_seed))
    vertices = (vertices - vertices.mean(0)) @ _pose(rng).T
    span = np.ptp(vertices[:, :2], axis=0).max()
    obstacles = _obstacles(rng, span)
    top = max([0.0] + [o["top"] for o in obstacles])
    vertices = vertices + [*rng.normal(0, 0.1, size=2), top + rng.uniform(0.05, 0.8) - vertices[:, 2].min()]
    material = _material(rng)
    pins = _pins(rng, vertices, span) if rng.random() < HANGING else None
    if pins is not None:  # held where the free part can fall by up to about its span before the ground
        vertices = vertices + [0.0, 0.0, rng.uniform(0.3, 1.2) * span]
    conditions = Conditions(frames=FRAMES, fps=FPS, ground_height=0.0, mass=material.vertex_mass * len(vertices),
                            velocity=(*rng.normal(0, 0.6, size=2), rng.uniform(-1.0, 1.0))
                            if pins is None and rng.random() < 0.6 else (0.0, 0.0, 0.0), pins=pins)
    conditions = nudged(conditions, nudge)
    began = time.perf_counter()
    run = simulate_cloth(vertices, faces, material, conditions, colliders=[o["mesh"] for o in obstacles])
    seconds = time.perf_counter() - began

    checks = {"penetration": float(max(0.0, -run.positions[..., 2].min())), "stretch": float(run.strain.max()),
              "compression": float(-run.strain.min()), "strain_p99": float(np.percentile(np.abs(run.strain), 99)),
              "inside_obstacles": _inside_fraction(run.positions, obstacles), "finite": bool(np.isfinite(run.positions).all()),
              "seconds": seconds}
    described = describe(conditions)
    described["obstacles"] = [{k: v for k, v in o.items() if k != "mesh"} for o in obstacles]
    return Sequence(
        category="cloth", shape=f"cloth-{shape_seed}", split=split, seed=seed, fps=conditions.fps,
        rest_vertices=vertices.astype(np.float32), faces=faces.astype(np.int32), positions=run.positions,
        masses=np.full(len(vertices), material.vertex_mass, dtype=np.float32), material=vars(material),
        conditions=described, checks=checks, generator=GENERATOR)


def _pose(rng):
    """Mostly lying flat with a tilt of up to 60 degrees and a random heading; a quarter of the time any way up."""
    if rng.random() < 0.25:
        return random_orientation(rng)
    tilt = axis_rotation([*rng.normal(size=2), 0.0], rng.uniform(0, np.radians(60)))
    return tilt @ axis_rotation([0.0, 0.0, 1.0], rng.uniform(0, 2 * np.pi))


def _pins(rng, vertices, span: float) -> list[int]:
    """A hold (HOLDS) along a random horizontal direction d: the vertex furthest along d, the two
    furthest along d +- e (e horizontal, across d: a tablecloth held at two corners) or every vertex
    within EDGE_BAND of the span of the furthest along d (a flag on its pole)."""
    hold = HOLDS[int(rng.integers(len(HOLDS)))]
    heading = rng.uniform(0, 2 * np.pi)
    d, e = np.array([np.cos(heading), np.sin(heading), 0.0]), np.array([-np.sin(heading), np.cos(heading), 0.0])
    if hold == "corner":
        return [int(np.argmax(vertices @ d))]
    if hold == "two corners":
        return sorted({int(np.argmax(vertices @ (d + e))), int(np.argmax(vertices @ (d - e)))})
    along = vertices @ d
    return np.flatnonzero(along >= along.max() - EDGE_BAND * span).tolist()


def _material(rng) -> ClothMaterial:
    """Silk to leather: Blender's presets span vertex mass 0.15-1 kg, tension 5-80, bending 0.05-150."""
    def log_uniform(low, high):
        return float(np.exp(rng.uniform(np.log(low), np.log(high))))

    tension = log_uniform(5.0, 80.0)
    return ClothMaterial(vertex_mass=log_uniform(0.15, 1.0), tension=tension, compression=tension,
                         shear=log_uniform(5.0, tension), bending=log_uniform(0.05, 150.0),
                         air_damping=rng.uniform(0.5, 2.0), tension_damping=rng.uniform(5.0, 25.0),
                         friction=rng.uniform(1.0, 10.0), quality=8 if tension < 40 else 12)


def _obstacles(rng, span: float) -> list[dict]:
    """None, one or two obstacles on the ground under the cloth: spheres and boxes about its size."""
    obstacles = []
    for _ in range(int(rng.choice([0, 1, 1, 2]))):
        center = rng.normal(0, 0.15 * span, size=2)
        if rng.random() < 0.5:
            radius = rng.uniform(0.15, 0.4) * span
            obstacles.append({"kind": "sphere", "center": np.array([*center, radius]), "radius": radius,
                              "top": 2 * radius})
        else:
            size = np.array([*rng.uniform(0.2, 0.6, size=2) * span, rng.uniform(0.05, 0.5) * span])
            obstacles.append({"kind": "box", "corner": np.array([*(center - size[:2] / 2), 0.0]), "size": size,
                              "top": float(size[2])})
    return [{**o, "mesh": obstacle_mesh(o)} for o in obstacles]


def _inside_fraction(positions, obstacles) -> float:
    """Share of vertex-frames deeper than INSIDE_TOLERANCE inside an obstacle (Blender misses some contacts)."""
    inside = np.zeros(positions.shape[:2], dtype=bool)
    for o in obstacles:
        if o["kind"] == "sphere":
            inside |= np.linalg.norm(positions - o["center"], axis=-1) < o["radius"] - INSIDE_TOLERANCE
        else:
            low, high = o["corner"] + INSIDE_TOLERANCE, o["corner"] + o["size"] - INSIDE_TOLERANCE
            inside |= ((positions > low) & (positions < high)).all(-1)
    return float(inside.mean())
