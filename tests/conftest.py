"""Blender's user folders go to a temp dir before anything imports bpy: an installed NeuROK (or any
extension with its own torch) must not leak into the tests."""

from tools.build_extension import isolate_user_folders

isolate_user_folders()
