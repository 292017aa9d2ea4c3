"""NeuROK for Blender: neural reduced-order physics baked to shape keys.

Importing this package needs no Blender; ``register()`` imports the Blender side, and the solver in
``core`` (torch) loads on the first simulation, so Blender starts as fast as without the add-on.
"""


def _classes():
    from . import panels, properties
    from .operators import CLASSES as OPERATORS

    return (*properties.CLASSES, *OPERATORS, *panels.CLASSES)


def register():
    import bpy

    from . import properties

    for cls in _classes():
        bpy.utils.register_class(cls)
    properties.attach()


def unregister():
    import bpy

    from . import properties

    properties.detach()
    for cls in reversed(_classes()):
        bpy.utils.unregister_class(cls)
