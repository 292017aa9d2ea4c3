"""``python -m neurok_blender simulate ...``: batch work, see ``cli.py``."""

import sys

from .cli import main

sys.exit(main())
