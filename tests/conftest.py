"""Blender's user folders go to a temp dir before anything imports bpy: an installed NeuROK (or any
extension with its own torch) must not leak into the tests."""

import os

from tools.build_extension import isolate_user_folders

isolate_user_folders()


def pytest_configure(config):
    """Parallel workers (``pytest -n``) share the cores: torch's threads each get their share, where
    each would otherwise start one thread per core and all of them would wait on each other."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
