"""Pool workers that end with their parent.

A pool's own shutdown runs only when its parent unwinds: workers of a killed calibration, benchmark
or corpus run were adopted by init and went on simulating (replays for minutes; corpus workers were
found busy on a core after their killed parent had gone).
"""

import os
import threading
import time

PARENT_CHECK = 1.0  # s between a worker's looks at whether its parent is still there


def exit_with_parent(parent: int) -> None:
    """Call in a worker: a daemon thread ends this process once ``parent`` is no longer its parent
    (it died and the worker was adopted)."""
    threading.Thread(target=_exit_without, args=(parent,), daemon=True).start()


def _exit_without(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    os._exit(1)
