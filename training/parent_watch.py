"""Pools of set-up workers (weights loaded, corpus read) that end with their parent, for the
calibration's replays, the benchmarks and the training's batch drawing; independent tasks (corpus
shards, batch files) run on ``neurok_blender.executors`` instead."""

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import torch

from neurok_blender.executors import exit_with_parent


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
