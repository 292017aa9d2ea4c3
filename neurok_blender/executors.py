"""Where independent tasks run: in this process, in local worker processes, or as tasks on Ray.

    for item, outcome in run_all(task, items, Executor(workers=2)):
        if isinstance(outcome, Failed): ...

``task(item)`` runs once per item, anywhere; an exception inside it becomes that item's outcome
(``Failed``, with the error's text), so one bad input never stops the rest. Outcomes arrive as
tasks finish. Local workers are spawned, not forked (a fork of a process whose bpy or OpenMP
threads run can hang), and exit when their parent dies. Ray is optional (``pip install ray``):
``ray="local"`` starts it on this machine, ``"auto"`` or an address joins a running cluster,
whose machines need the same Python packages (bpy, torch); the code of ``modules`` travels with
the tasks (Ray's ``py_modules``).
"""

import dataclasses
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from types import ModuleType

PARENT_CHECK = 1.0  # s between a worker's looks at whether its parent is still there


@dataclasses.dataclass(frozen=True)
class Failed:
    """A task that raised (``error`` is "Type: message") or whose worker died."""

    error: str


@dataclasses.dataclass(frozen=True)
class Executor:
    """``workers`` local processes (1: this process), or Ray at ``ray`` ("local", "auto", an address)."""

    workers: int = 1
    ray: str | None = None

    def __post_init__(self):
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.ray is not None and self.workers != 1:
            raise ValueError("choose local workers or Ray, not both")
        if self.ray is not None and not self.ray:
            raise ValueError("a Ray address is 'local', 'auto' or host:port")

    @property
    def in_process(self) -> bool:
        return self.ray is None and self.workers == 1

    def __str__(self) -> str:
        if self.ray is not None:
            names = {"local": "Ray on this machine", "auto": "the Ray cluster running here"}
            return names.get(self.ray, f"the Ray cluster at {self.ray}")
        return "this process" if self.workers == 1 else f"{self.workers} local processes"


def run_all(task: Callable, items: Sequence, executor: Executor, setup: Callable[[], None] | None = None,
            modules: Iterable[ModuleType] = ()) -> Iterator[tuple[object, object]]:
    """(item, outcome) for every item, in the order they finish: ``task(item)``'s value or ``Failed``;
    RuntimeError, before any task, when Ray is wanted and missing or its cluster cannot be reached.
    ``setup()`` runs once in each process before its first task (in this one too, in-process).
    ``task`` is a module-level function or a partial of one, ``setup`` a module-level function: they
    travel to the workers by reference."""
    if executor.ray is not None:
        yield from _on_ray(task, items, executor.ray, setup, list(modules))
    elif executor.workers == 1:
        for item in items:
            yield item, _attempt(task, setup, item)
    else:
        yield from _on_local_pool(task, items, executor.workers, setup)


def run_in_order(task: Callable, items: Sequence, executor: Executor, setup: Callable[[], None] | None = None,
                 modules: Iterable[ModuleType] = ()) -> list:
    """``run_all``'s outcomes in the order of ``items``."""
    outcomes = {id(item): outcome for item, outcome in run_all(task, items, executor, setup, modules)}
    return [outcomes[id(item)] for item in items]


_set_up = set()  # the setups this process has run


def _attempt(task: Callable, setup: Callable | None, item):
    if setup is not None and setup not in _set_up:
        setup()
        _set_up.add(setup)
    try:
        return task(item)
    except Exception as error:  # noqa: BLE001 (every failure is an item's outcome, reported by the caller)
        return Failed(_describe(error))


def _describe(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(error), error)).strip()


def _on_local_pool(task, items, workers: int, setup):
    """A worker that dies (Blender crashing on a file) takes its pool down with every task still in
    it. Those that had not started run again on a fresh pool; those that had (the culprit, and what
    ran beside it) run again each alone, where a death names its culprit."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    started = context.SimpleQueue()  # the workers note each task's index as it starts
    pending, suspects = list(range(len(items))), []
    while pending or suspects:
        alone = not pending
        batch = [suspects.pop()] if alone else pending
        pending, broken = [], []
        pool = ProcessPoolExecutor(1 if alone else min(workers, len(batch)), context, _start_worker,
                                   (os.getpid(), started))
        try:
            futures = {pool.submit(_attempt_noted, task, setup, index, items[index]): index for index in batch}
            for future in as_completed(futures):
                index = futures[future]
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    broken.append(index)
                    continue
                yield items[index], outcome
        finally:
            pool.shutdown(cancel_futures=True)
        ran = set()
        while not started.empty():
            ran.add(started.get())
        for index in broken:
            if alone:
                yield items[index], Failed("its worker process died running it (a crash, or killed)")
            else:
                (suspects if index in ran else pending).append(index)


def _attempt_noted(task, setup, index: int, item):
    _started.put(index)
    return _attempt(task, setup, item)


_started = None  # a local worker's queue of the tasks it starts (``_start_worker``)


def _on_ray(task, items, address: str, setup, modules):
    try:
        import ray
    except ImportError:
        raise RuntimeError("running on Ray needs the ray package: pip install 'ray>=2.9'") from None
    started = not ray.is_initialized()
    if started:
        _reachable(address)
        try:
            ray.init(address=address, runtime_env={"py_modules": modules} if modules else None,
                     include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        except ConnectionError as error:  # "auto" with no cluster running here
            raise RuntimeError(f"no Ray cluster at {address}: {error}") from None
    try:
        remote = ray.remote(num_cpus=1)(_attempt)
        pending = {remote.remote(task, setup, item): item for item in items}
        while pending:
            (done,), _ = ray.wait(list(pending), num_returns=1)
            item = pending.pop(done)
            try:
                outcome = ray.get(done)
            except Exception as error:  # noqa: BLE001 (its worker or node died, after Ray's retries)
                outcome = Failed(f"Ray could not run it ({_describe(error)})")
            yield item, outcome
    finally:
        if started:
            ray.shutdown()


def _reachable(address: str) -> None:
    """A host:port that answers, or RuntimeError at once (Ray itself retries a dead address for
    minutes)."""
    host, _, port = address.rpartition(":")
    if address in ("local", "auto") or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as error:
        raise RuntimeError(f"no Ray cluster answers at {address}: {error}") from None


def _start_worker(parent: int, started) -> None:
    """A spawned worker starts with its parent's ``sys.path``: once the parent has imported bpy, that
    holds Blender's ``scripts/modules``, whose pure-Python ``bpy`` package would shadow the compiled
    module here ("No module named '_bpy'"); importing the real one adds its paths back."""
    global _started
    _started = started
    exit_with_parent(parent)
    sys.path[:] = [entry for entry in sys.path if not os.path.isfile(os.path.join(entry, "bpy", "__init__.py"))]


def exit_with_parent(parent: int) -> None:
    """Call in a worker: a daemon thread ends this process once ``parent`` is no longer its parent
    (it died and the worker was adopted). A pool's own shutdown runs only when its parent unwinds:
    workers of killed runs were found simulating for minutes after."""
    threading.Thread(target=_exit_without, args=(parent,), daemon=True).start()


def _exit_without(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    os._exit(1)
