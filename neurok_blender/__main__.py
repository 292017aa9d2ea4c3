"""``python -m neurok_blender simulate ...``: batch work, see ``cli.py``."""

import os
import sys

from .cli import main

status = main()
sys.stdout.flush()
sys.stderr.flush()
# The bpy 4.2 module segfaults while Python shuts down once the add-on's properties with Python
# callbacks are registered (bpy 5.0 does not); everything is written by now, so skip that shutdown.
os._exit(status)
