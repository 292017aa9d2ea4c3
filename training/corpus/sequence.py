"""One simulated sequence and its compact on-disk form."""

import json
from dataclasses import dataclass, field

import numpy as np

CATEGORIES = ("elastic", "cloth", "continuum", "articulated")
SPLITS = ("train", "heldout")
SPLIT_STREAM = {"train": 0, "heldout": 1}  # a second seed word, so the splits draw independent streams
HELDOUT_SHAPES = 1_000_000  # procedural shape seeds at or above this are held out, below it train


@dataclass
class Sequence:
    """Everything the model and the benchmarks need from one run of a reference simulator."""

    category: str
    shape: str  # shape identifier; no shape is in both splits
    split: str
    seed: int
    fps: float
    rest_vertices: np.ndarray  # (V, 3) float32, world at frame 0
    faces: np.ndarray  # (F, 3) int32
    positions: np.ndarray  # (T, V, 3), world; stored as float16 offsets from a float32 centroid per frame
    masses: np.ndarray  # (V,) float32, kg
    part_ids: np.ndarray | None = None  # (V,) int16 for articulated objects
    material: dict = field(default_factory=dict)
    conditions: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)  # physical checks measured on the run
    generator: str = ""

    def __post_init__(self):
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}")
        if self.split not in SPLITS:
            raise ValueError(f"unknown split {self.split!r}")
        if self.positions.ndim != 3 or self.positions.shape[1:] != self.rest_vertices.shape:
            raise ValueError(f"positions {self.positions.shape} do not match rest vertices {self.rest_vertices.shape}")

    def metadata(self) -> dict:
        return {"category": self.category, "shape": self.shape, "split": self.split, "seed": self.seed,
                "fps": self.fps, "frames": int(self.positions.shape[0]), "vertices": int(self.rest_vertices.shape[0]),
                "material": self.material, "conditions": self.conditions, "checks": self.checks,
                "generator": self.generator}

    def arrays(self) -> dict[str, np.ndarray]:
        """What a shard stores. Positions as float16 offsets from each frame's centroid: float16 keeps
        about 3 significant digits, so world coordinates metres away would lose millimetre parts."""
        origins = self.positions.astype(np.float64).mean(axis=1)
        offsets = self.positions - origins[:, None, :]
        arrays = {"rest_vertices": self.rest_vertices.astype(np.float32), "faces": self.faces.astype(np.int32),
                  "origins": origins.astype(np.float32), "offsets": offsets.astype(np.float16),
                  "masses": self.masses.astype(np.float32)}
        if self.part_ids is not None:
            arrays["part_ids"] = self.part_ids.astype(np.int16)
        return arrays

    @classmethod
    def from_stored(cls, metadata: dict, arrays: dict) -> "Sequence":
        keep = {k: metadata[k] for k in ("category", "shape", "split", "seed", "fps", "material", "conditions",
                                         "checks", "generator")}
        positions = arrays["origins"][:, None, :] + arrays["offsets"].astype(np.float32)
        return cls(**keep, rest_vertices=arrays["rest_vertices"], faces=arrays["faces"],
                   positions=positions, masses=arrays["masses"], part_ids=arrays.get("part_ids"))


def to_json(value) -> str:
    """JSON for metadata with numpy scalars and arrays in it."""
    return json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o), sort_keys=True)
