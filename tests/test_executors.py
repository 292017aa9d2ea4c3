"""Independent tasks in this process, in local workers or on Ray: the same outcomes, failures kept."""

import importlib.util
import math
import os
import sys

import pytest

from neurok_blender.executors import Executor, Failed, run_all, run_in_order

set_up_in = []  # the processes whose setup ran (per process: a worker's own copy)


def note_setup():
    set_up_in.append(os.getpid())


def setups_so_far(_item) -> tuple[int, int]:
    return os.getpid(), len(set_up_in)


def die_on_three(item):
    if item == 3:
        os._exit(3)  # as Blender crashing on a file
    return item


@pytest.mark.parametrize("executor", [Executor(), Executor(workers=2)], ids=str)
def test_outcomes_come_back_whatever_runs_them_and_setup_runs_once_per_process(executor):
    assert run_in_order(math.sqrt, [4.0, -1.0, 9.0], executor) == [2.0, Failed("ValueError: math domain error"), 3.0]
    seen = run_in_order(setups_so_far, list(range(6)), executor, setup=note_setup)
    assert {count for _, count in seen} == {1}  # every process had set up once, before its first task
    assert ({pid for pid, _ in seen} == {os.getpid()}) == executor.in_process


def test_a_task_that_kills_its_worker_is_reported_and_the_others_finish():
    outcomes = run_in_order(die_on_three, list(range(7)), Executor(workers=2))
    assert outcomes[:3] + outcomes[4:] == [0, 1, 2, 4, 5, 6]
    assert isinstance(outcomes[3], Failed) and "worker process died running it" in outcomes[3].error


def test_ray_runs_the_tasks_on_this_machine():
    pytest.importorskip("ray")
    assert run_in_order(math.sqrt, [4.0, -1.0, 9.0], Executor(ray="local")) == [2.0, Failed("ValueError: math domain error"), 3.0]


def test_bad_choices_and_a_missing_ray_are_named(monkeypatch):
    with pytest.raises(ValueError, match="at least 1"):
        Executor(workers=0)
    with pytest.raises(ValueError, match="not both"):
        Executor(workers=2, ray="local")
    if importlib.util.find_spec("ray") is not None:  # an address nothing answers at: said at once
        with pytest.raises(RuntimeError, match="no Ray cluster answers at 127.0.0.1:1"):
            list(run_all(math.sqrt, [1.0], Executor(ray="127.0.0.1:1")))
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(RuntimeError, match="pip install"):
        list(run_all(math.sqrt, [1.0], Executor(ray="local")))
