"""NeuROK for Blender: neural reduced-order physics baked to shape keys.

Importing this package needs no Blender; ``register()`` imports the Blender side, and the solver in
``core`` (torch) loads on the first simulation, so Blender starts as fast as without the add-on.
"""


def _classes():
    from . import gizmos, panels, preferences, properties
    from .operators import CLASSES as OPERATORS

    return (*preferences.CLASSES, *properties.CLASSES, *OPERATORS, *panels.CLASSES, *gizmos.CLASSES)


def register():
    import bpy

    from . import job, point_cache, properties

    for cls in _classes():
        bpy.utils.register_class(cls)
    properties.attach()
    bpy.app.handlers.load_pre.append(job.cancel_on_file_load)
    for handlers in (bpy.app.handlers.undo_post, bpy.app.handlers.redo_post):
        handlers.append(point_cache.restore_cleared_caches)


def unregister():
    import bpy

    from . import job, point_cache, properties

    if job.cancel_on_file_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(job.cancel_on_file_load)
    for handlers in (bpy.app.handlers.undo_post, bpy.app.handlers.redo_post):
        if point_cache.restore_cleared_caches in handlers:
            handlers.remove(point_cache.restore_cleared_caches)
    if job.running() is not None:  # disabling the add-on mid-solve: stop it, bake nothing
        job.running().cancel()
    properties.detach()
    for cls in reversed(_classes()):
        bpy.utils.unregister_class(cls)
