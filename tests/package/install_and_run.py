"""Run in a fresh interpreter: install the built zip as Blender does, enable it, simulate with it.

    python install_and_run.py EXTENSION.zip
Prints one JSON line with what it found.
"""

import json
import os
import sys
import tempfile

os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="neurok-install-")
import bpy  # noqa: E402
import addon_utils  # noqa: E402  (Blender's own module, importable once bpy is)

zip_path = sys.argv[1]
result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
module = "bl_ext.user_default.neurok"
enabled = addon_utils.check(module)[1]
bpy.ops.mesh.primitive_cube_add(location=(0.0, 0.0, 1.0))
obj = bpy.context.active_object
obj.neurok.frame_end = 5
simulated = bpy.ops.neurok.simulate()
preferences = bpy.context.preferences.addons[module].preferences
preferences.weights = "//nowhere/own.pt"  # a weights override the solver must use (and report missing)
obj.neurok.category = "elastic"
try:
    bpy.ops.neurok.simulate()
    override = "no error"
except RuntimeError as error:
    override = str(error)
print(json.dumps({
    "install": sorted(result),
    "enabled": enabled,
    "module_file": sys.modules[module].__file__,
    "operators": sorted(op for op in dir(bpy.ops.neurok) if not op.startswith("_")),
    "simulate": sorted(simulated),
    "keys": len(obj.data.shape_keys.key_blocks),
    "threads": preferences.threads,
    "cache_folder": sys.modules[module + ".preferences"].cache_folder(),
    "weights_override": override,
}))
