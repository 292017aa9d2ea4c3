"""Plain functions behind every button: the sidebar, ``bpy.ops.neurok.*``, the console and batch jobs.

    import neurok_blender.api as neurok           # or bl_ext.user_default.neurok.api once installed
    neurok.simulate_object(bpy.data.objects["Cube"])
    neurok.export_object(bpy.data.objects["Cube"], "/tmp/cube.glb")
    neurok.clear_object(bpy.data.objects["Cube"])
"""

from typing import Callable

from . import output
from .export import export_object  # noqa: F401  (part of this API)
from .job import SimulationJob


def simulate_object(obj, progress: Callable[[int, int], bool | None] | None = None) -> str:
    """Simulate ``obj`` in the current scene with its ``obj.neurok`` settings and bake the motion
    (shape keys, or a point cache if ``obj.neurok.output`` says so). Returns a one-line summary.

    The object is read as it is now (current frame, modifiers applied). Everything is checked and
    simulated before the object is touched, so a bad input, a failed rollout or a cancel
    (``progress`` returning False) leaves the scene exactly as it was.
    """
    job = SimulationJob.read(obj)
    return job.bake(job.solve(progress))


def clear_object(obj) -> str:
    """Remove what the last bake made (shape keys and their F-curves, or the point-cache modifier);
    says what went."""
    if obj is None or obj.type != "MESH":
        raise ValueError("select the baked mesh object to clear")
    return output.clear(obj)
