"""Plain functions behind every button: the sidebar, ``bpy.ops.neurok.*``, the console and batch jobs.

    import neurok_blender.api as neurok           # or bl_ext.user_default.neurok.api once installed
    neurok.simulate_object(bpy.data.objects["Cube"])
    neurok.export_object(bpy.data.objects["Cube"], "/tmp/cube.glb")
    neurok.clear_object(bpy.data.objects["Cube"])
"""

from typing import Callable

from . import output
from .export import export_object  # noqa: F401  (part of this API)
from .estimate import BakeEstimate
from .job import SceneJob, SimulationJob
from .preferences import SolverOptions


def simulate_object(obj, progress: Callable[[int, int], bool | None] | None = None,
                    options: SolverOptions | None = None, announce: Callable[[str], None] | None = None) -> str:
    """Simulate ``obj`` in the current scene with its ``obj.neurok`` settings and bake the motion
    (shape keys, or a point cache if ``obj.neurok.output`` says so). Returns a one-line summary.

    The object is read as it is now (current frame, modifiers applied). Everything is checked and
    simulated before the object is touched, so a bad input, a failed rollout or a cancel
    (``progress`` returning False) leaves the scene exactly as it was. ``options`` (threads,
    weights) overrides the add-on's preferences. ``announce(text)`` hears the time and memory a large
    bake will take before it starts (``estimate_object`` tells any bake's before calling this).
    """
    job = SimulationJob.read(obj, options)
    estimate = job.estimate()
    if announce is not None and estimate.large:
        announce(f"NeuROK: a large bake of '{obj.name}': {estimate}")
    return job.bake(job.solve(progress))


def simulate_together(objects, progress: Callable[[int, int], bool | None] | None = None,
                      options: SolverOptions | None = None, announce: Callable[[str], None] | None = None) -> str:
    """Simulate ``objects`` (meshes, each with its own ``obj.neurok`` settings) together in one solve,
    meeting each other and the scene's colliders, and bake each; one summary. As ``simulate_object``
    otherwise: nothing is touched unless every body solved. They must share their frame range,
    ground, integrator, substeps and sleep (ValueError names two that differ)."""
    job = SceneJob.read(objects, options)
    estimate = job.estimate()
    if announce is not None and estimate.large:
        announce(f"NeuROK: a large bake of '{job.name}': {estimate}")
    return job.bake(job.solve(progress))


def estimate_object(obj) -> BakeEstimate:
    """What simulating ``obj`` would take, checked as Simulate checks it (ValueError if it cannot):
    ``str()`` reads "about 3 min and 2.1 GB of the 20.5 GB free"; ``.large`` says Simulate asks first."""
    return SimulationJob.read(obj).estimate()


def clear_object(obj) -> str:
    """Remove what the last bake made (shape keys and their F-curves, or the point-cache modifier);
    says what went."""
    if obj is None or obj.type != "MESH":
        raise ValueError("select the baked mesh object to clear")
    return output.clear(obj)
