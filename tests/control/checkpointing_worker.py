"""A task that checkpoints when it is stopped, for the control-loop tests of evictions
(elastic surplus, single tasks of a default-scheduler job): what it records, and the jobs
made of it. A module of its own (not conftest) under a name no other test directory uses."""

from __future__ import annotations

import json
import time
from pathlib import Path

from control_support import PY

from shoal.api import Elasticity, Job, Resources, SchedulerName, TaskGroup, TaskState
from shoal.control import ControlPlane

#: A task that records what it was told and when it started, then runs until `release`
#: exists. On SIGTERM it takes 0.3 s (a checkpoint), records when it stopped, and exits 143.
WORKER = """
import json, os, signal, sys, time
out = sys.argv[1]
me = f"{os.environ['SHOAL_JOB']}-{os.environ['SHOAL_TASK_INDEX']}-{os.environ['SHOAL_ATTEMPT']}"
def stop(*_):
    time.sleep(0.3)
    open(os.path.join(out, me + '.stopped'), 'w').write(repr(time.time()))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
seen = {k: os.environ.get(k) for k in ('RANK', 'WORLD_SIZE', 'CUDA_VISIBLE_DEVICES',
                                       'SHOAL_MEMBERSHIP_FILE')}
seen['started'] = time.time()
json.dump(seen, open(os.path.join(out, me + '.started'), 'w'))
while not os.path.exists(os.path.join(out, 'release')):
    time.sleep(0.05)
"""


def worker_job(name: str, out: Path, *, replicas: int, priority: str,
               elastic: Elasticity | None = None,
               scheduler: SchedulerName = SchedulerName.SHOAL) -> Job:
    """A job of `replicas` workers, one GPU each, that write into `out`."""
    group = TaskGroup("worker", replicas, Resources.of(cpu=1000, memory=128, gpu=1),
                      command=(PY, "-c", WORKER, str(out)))
    return Job(name, (group,), scheduler_name=scheduler, priority_class=priority,
               elastic=elastic, submitted=time.time())


def started(out: Path, name: str, index: int, attempt: int = 1) -> dict[str, object] | None:
    """What an attempt recorded when it started; None while it has not (or is writing)."""
    path = out / f"{name}-{index}-{attempt}.started"
    if not path.exists():
        return None
    try:
        loaded: dict[str, object] = json.loads(path.read_text())
    except json.JSONDecodeError:  # being written
        return None
    return loaded


def started_at(out: Path, name: str, index: int, attempt: int = 1) -> float:
    recorded = started(out, name, index, attempt)
    assert recorded is not None, f"{name}-{index}-{attempt} has not started"
    return float(str(recorded["started"]))


def stopped_at(out: Path, name: str, index: int, attempt: int = 1) -> float:
    return float((out / f"{name}-{index}-{attempt}.stopped").read_text())


def task_states(plane: ControlPlane, name: str) -> list[TaskState]:
    stored = plane.repository.get_job(name)
    assert stored is not None
    return [t.state for t in sorted(stored.tasks, key=lambda t: t.index)]
