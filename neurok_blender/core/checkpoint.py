"""Versioned model checkpoints: the weights with the config that built them, loadable offline.

    {"format": "neurok-checkpoint", "version": 1, "config": {...}, "weights": state_dict, "about": {...}}

``about`` records how the weights were made (training steps, corpus, time). Loading never touches
the network and says which file is wrong and how.
"""

import dataclasses
import os
import warnings
from pathlib import Path

import torch

from .model import ModelConfig, NeuROKModel

FORMAT, VERSION = "neurok-checkpoint", 1


def resolve_device(device: str = "auto") -> torch.device:
    """"auto" picks CUDA when present; "cuda" without CUDA falls back to the CPU with a warning."""
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        warnings.warn("CUDA was requested but is not available; running on the CPU", RuntimeWarning, stacklevel=2)
        return torch.device("cpu")
    return torch.device("cuda" if device != "cpu" and torch.cuda.is_available() else "cpu")


def save_checkpoint(path, model: NeuROKModel, about: dict | None = None, **extra) -> None:
    """Write atomically (a temporary file renamed), so an interrupted save never leaves half a file."""
    path = Path(path)
    payload = {"format": FORMAT, "version": VERSION, "config": dataclasses.asdict(model.config),
               "weights": model.state_dict(), "about": about or {}, **extra}
    temporary = path.with_name(path.name + ".partial")
    torch.save(payload, temporary)
    os.replace(temporary, path)


def read_checkpoint(path) -> dict:
    """The raw payload, checked for format and version; ValueError naming the file otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated or not a torch file: say so, with the file
        raise ValueError(f"model checkpoint {path} cannot be read (truncated or not a checkpoint): {error}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a NeuROK checkpoint")
    if payload.get("version") != VERSION:
        raise ValueError(f"{path} has checkpoint version {payload.get('version')}; this NeuROK reads version {VERSION}")
    return payload


def load_model(path, device: str = "auto") -> NeuROKModel:
    """The model stored at ``path``, in eval mode on the chosen device."""
    payload = read_checkpoint(path)
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = set(payload["config"]) - known
    if unknown:
        raise ValueError(f"{path} was made by a newer NeuROK (config fields {sorted(unknown)} unknown here)")
    model = NeuROKModel(ModelConfig(**payload["config"]))
    try:
        model.load_state_dict(payload["weights"])
    except RuntimeError as error:
        raise ValueError(f"{path} does not fit its own config: {error}") from None
    return model.to(resolve_device(device)).eval()
