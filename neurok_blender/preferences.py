"""Add-on preferences (Edit > Preferences > Add-ons > NeuROK): threads, weights, cache folder.

Scripts and tests that import ``neurok_blender`` without installing it as an add-on get the same
defaults from ``solver_options()``, so every caller goes through one function.
"""

import os
from dataclasses import dataclass

import bpy
from bpy.props import BoolProperty, IntProperty, StringProperty


class NeurokPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    threads: IntProperty(name="CPU Threads", default=0, min=0, soft_max=64,
                         description="Threads PyTorch uses on the CPU; 0 picks one: the solver's steps are "
                                     "small, and more threads wait on each other whenever another program "
                                     "uses the CPU")
    weights: StringProperty(name="Weights", subtype="FILE_PATH", default="",
                            description="A checkpoint of your own (from training/train.py) instead of the "
                                        "weights shipped with the add-on; empty uses the shipped ones")
    cache_folder: StringProperty(name="Cache Folder", subtype="DIR_PATH", default="",
                                 description="Where point caches of bakes are written; empty uses the "
                                             "extension's own user folder")

    gizmos_in_playback: BoolProperty(name="Arrows During Playback", default=False,
                                     description="Keep the force and velocity arrows in the viewport while "
                                                 "the animation plays")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        for name in ("threads", "weights", "cache_folder", "gizmos_in_playback"):
            layout.prop(self, name)
        layout.label(text=f"Cache: {cache_folder()}", icon="FILE_FOLDER")


# The solver's steps are small tensor operations (tens of generalized coordinates, hundreds of points):
# threads that share them wait on each other at every operation, and when another program holds a core
# they wait for it (docs/performance.md).
AUTO_THREADS = 1


@dataclass(frozen=True)
class SolverOptions:
    threads: int = 0  # 0: AUTO_THREADS
    weights: str | None = None  # None: the shipped weights

    @property
    def torch_threads(self) -> int:
        return self.threads or AUTO_THREADS


def _preferences():
    addon = bpy.context.preferences.addons.get(__package__)
    return addon.preferences if addon is not None else None


def solver_options() -> SolverOptions:
    """The preferences as plain values, read on the main thread for a solve that may run on another."""
    prefs = _preferences()
    if prefs is None:
        return SolverOptions()
    weights = bpy.path.abspath(prefs.weights) if prefs.weights.strip() else None
    return SolverOptions(threads=prefs.threads, weights=weights)


def hide_gizmos_in_playback() -> bool:
    prefs = _preferences()
    return prefs is None or not prefs.gizmos_in_playback


def cache_folder() -> str:
    """The preference if set, else the extension's user folder (kept across upgrades), else, when not
    installed as an extension (tests, the bpy module), a folder in this session's temporary directory."""
    prefs = _preferences()
    if prefs is not None and prefs.cache_folder.strip():
        folder = bpy.path.abspath(prefs.cache_folder)
    elif __package__.startswith("bl_ext."):
        folder = bpy.utils.extension_path_user(__package__, path="cache", create=True)
    else:
        folder = os.path.join(bpy.app.tempdir, "neurok_cache")
    os.makedirs(folder, exist_ok=True)
    return folder


CLASSES = (NeurokPreferences,)
