"""Pool workers end with their parent (training.parent_watch, neurok_blender.executors)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neurok_blender.executors import PARENT_CHECK


@pytest.mark.parametrize("pool", [
    "from training.parent_watch import spawned_pool\n"  # calibration, benchmarks and training batches
    "pool = spawned_pool(2, str, 'weights')\n"
    "futures = [pool.submit(time.sleep, 120) for _ in range(2)]\n",
    "import threading\n"  # corpus shards and batch files
    "from neurok_blender.executors import Executor, run_all\n"
    "tasks = lambda: list(run_all(time.sleep, [120, 120], Executor(workers=2)))\n"
    "threading.Thread(target=tasks, daemon=True).start()\n"], ids=["replays", "tasks"])
def test_pool_workers_exit_when_their_parent_is_killed(pool):
    """A killed calibration, benchmark or corpus run must not leave its workers simulating (they had
    gone on for minutes): each worker watches its parent."""
    script = ("import multiprocessing, time\n" + pool +
              "deadline = time.monotonic() + 60\n"
              "while len(multiprocessing.active_children()) < 2 and time.monotonic() < deadline: time.sleep(0.05)\n"
              "print(*[p.pid for p in multiprocessing.active_children()], flush=True)\n"
              "time.sleep(120)\n")
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    try:
        assert len(workers) == 2 and all(_running(pid) for pid in workers)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10 * PARENT_CHECK
        while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_running(pid) for pid in workers)
    finally:
        parent.kill()
        for pid in filter(_running, workers):
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an adopted child its new parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
