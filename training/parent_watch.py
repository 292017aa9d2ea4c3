"""Pool workers that end with their parent.

A pool's own shutdown runs only when its parent unwinds: workers of a killed calibration, benchmark
or corpus run were adopted by init and went on simulating (replays for minutes; corpus workers were
found busy on a core after their killed parent had gone).
"""

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import torch

PARENT_CHECK = 1.0  # s between a worker's looks at whether its parent is still there


def exit_with_parent(parent: int) -> None:
    """Call in a worker: a daemon thread ends this process once ``parent`` is no longer its parent
    (it died and the worker was adopted)."""
    threading.Thread(target=_exit_without, args=(parent,), daemon=True).start()


def _exit_without(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    os._exit(1)


def spawned_pool(jobs: int, initializer, argument) -> ProcessPoolExecutor:
    """``jobs`` processes on one thread each (the processes are the parallelism), each set up by
    ``initializer(argument)`` (the weights to load, the corpus to read); spawned, not forked: a fork
    of a process whose OpenMP threads run can hang. A worker whose parent is gone exits: the pool's
    own shutdown only runs when the parent unwinds, and workers of a killed run went on replaying."""
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(jobs, context, _set_up_worker, (os.getpid(), initializer, argument))


def _set_up_worker(parent: int, initializer, argument) -> None:
    exit_with_parent(parent)
    torch.set_num_threads(1)
    initializer(argument)
