"""The scale-up hook: what is missing when jobs wait for capacity, the hook's cooldown, and
the control loop calling a real command with the request on stdin."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from control_support import job

from shoal.api import (
    Job,
    Node,
    PendingKind,
    PendingReason,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.control import ControlPlane
from shoal.control.scale_up import ScaleUpHook, ScaleUpRequest, shortfall
from shoal.scheduler.model import SchedulerModel


def gang(name: str, gpus: int, replicas: int, *, running: int = 0, queue: str = "default"
         ) -> Job:
    tasks = tuple(Task(name, "w", i, TaskState.RUNNING, node="n0", gpus=(), started=0.0)
                  for i in range(running))
    return Job(name, (TaskGroup("w", replicas, Resources.of(gpu=gpus)),), queue=queue,
               scheduler_name=SchedulerName.SHOAL, submitted=0.0, tasks=tasks)


def reason(kind: PendingKind) -> PendingReason:
    return PendingReason(kind, "…")


def test_shortfall_counts_only_jobs_that_more_machines_would_help() -> None:
    model = SchedulerModel([Node("n0", Resources.of(gpu=8))],
                           [VirtualCluster("capped")])
    model.add_jobs([gang("held", 6, 1, running=1), gang("gang", 2, 3),
                    gang("quota", 4, 1, queue="capped"), gang("fifo", 1, 1)])
    reasons = {"gang": reason(PendingKind.GANG),
               "quota": reason(PendingKind.QUEUE_LIMIT),
               "fifo": reason(PendingKind.BLOCKED)}
    request = shortfall(model, reasons, now=5.0)
    # The gang asks 3 × 2 GPUs; 2 are free.
    assert request == ScaleUpRequest(Resources.of(gpu=4), ("gang",), 5.0)
    assert shortfall(model, {"fifo": reason(PendingKind.BLOCKED)}, now=5.0) is None
    # What is free covers a waiting job's demand: nothing is missing.
    small = SchedulerModel([Node("n0", Resources.of(gpu=8))])
    small.add_jobs([gang("fits", 2, 1)])
    assert shortfall(small, {"fits": reason(PendingKind.INSUFFICIENT_RESOURCES)}, 1.0) is None


def recorder(tmp_path: Path) -> tuple[str, Path]:
    """A hook command that appends each request it gets on stdin to a file."""
    out = tmp_path / "requests.jsonl"
    script = tmp_path / "hook.py"
    script.write_text("import sys\nwith open(sys.argv[1], 'a') as f:\n"
                      "    f.write(sys.stdin.read() + '\\n')\n")
    return f"{sys.executable} {script} {out}", out


def requests_in(path: Path, count: int, timeout: float = 15.0) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return [json.loads(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"the hook was not called {count} times in {timeout} s")


def test_the_hook_gets_the_request_at_most_once_per_cooldown(tmp_path: Path) -> None:
    command, out = recorder(tmp_path)
    hook = ScaleUpHook(command, cooldown=60.0)
    first = ScaleUpRequest(Resources.of(gpu=4, cpu=2000), ("a", "b"), 100.0)
    assert hook.consider(None) is False
    assert hook.consider(first) is True
    assert requests_in(out, 1) == [{"missing": {"cpu": "2", "gpu": 4},
                                    "waitingJobs": ["a", "b"], "time": 100.0}]
    assert hook.consider(ScaleUpRequest(Resources.of(gpu=8), ("c",), 159.0)) is False
    assert hook.consider(ScaleUpRequest(Resources.of(gpu=8), ("c",), 160.0)) is True
    assert requests_in(out, 2)[1]["missing"] == {"gpu": 8}
    assert hook.calls == 2


def test_the_control_loop_calls_the_hook_when_jobs_wait_for_gpus(
        make_plane: Callable[[], ControlPlane], tmp_path: Path) -> None:
    command, out = recorder(tmp_path)
    plane = make_plane()
    plane.scale_up = ScaleUpHook(command, cooldown=3600.0)
    plane.submit(job("blocker", "import time; time.sleep(60)", gpu=4))
    plane.step()
    assert plane.scale_up.calls == 0  # it fitted: nothing is missing
    plane.submit(job("waiting", "pass", gpu=2, replicas=2))
    plane.step()
    [request] = requests_in(out, 1)
    assert request["missing"] == {"gpu": 4} and request["waitingJobs"] == ["waiting"]
