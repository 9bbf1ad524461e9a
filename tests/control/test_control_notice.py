"""The preemption notice (issue 17) under the live control loop, with real processes: a job
whose tasks are evicted finds, in its membership file, why and by when — written before its
SIGTERM — so a task that traps SIGTERM can checkpoint knowing what is happening. Every job's
tasks get `SHOAL_MEMBERSHIP_FILE`, gang jobs' too. Local engine; every wait is on a
condition (a file written, a state stored)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from control_support import PY, finished, state_of, step_until

from shoal.api import (
    Elasticity,
    Job,
    JobState,
    PriorityClass,
    Resources,
    ScaleStep,
    SchedulerName,
    TaskGroup,
)
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile

CLASSES = (PriorityClass("high", 1000), PriorityClass("low", 10))
GRACE = 5.0

#: On SIGTERM, reads its job's membership file and records the notice it found (and when it
#: read it), then exits 143. Runs until `release` exists.
READER = """
import json, os, signal, sys, time
out = sys.argv[1]
me = f"{os.environ['SHOAL_JOB']}-{os.environ['SHOAL_TASK_INDEX']}-{os.environ['SHOAL_ATTEMPT']}"
path = os.environ.get('SHOAL_MEMBERSHIP_FILE')
def stop(*_):
    try:
        found = json.load(open(path)) if path else None
    except (OSError, ValueError) as exc:
        found = {'error': repr(exc)}
    json.dump({'file': found, 'at': time.time()}, open(os.path.join(out, me + '.tmp'), 'w'))
    os.replace(os.path.join(out, me + '.tmp'), os.path.join(out, me + '.notice'))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
open(os.path.join(out, me + '.started'), 'w').write(path or '')
while not os.path.exists(os.path.join(out, 'release')):
    time.sleep(0.05)
"""


def reader_job(name: str, out: Path, *, replicas: int, priority: str, gpu: int = 1,
               elastic: Elasticity | None = None) -> Job:
    group = TaskGroup("worker", replicas, Resources.of(cpu=max(500, 1000 * gpu), memory=128,
                                                       gpu=gpu),
                      command=(PY, "-c", READER, str(out)))
    return Job(name, (group,), scheduler_name=SchedulerName.SHOAL, priority_class=priority,
               elastic=elastic, submitted=time.time())


def started(out: Path, name: str, index: int, attempt: int = 1) -> bool:
    return (out / f"{name}-{index}-{attempt}.started").exists()


def notice(out: Path, name: str, index: int, attempt: int = 1) -> dict[str, object] | None:
    path = out / f"{name}-{index}-{attempt}.notice"
    if not path.exists():
        return None
    loaded: dict[str, object] = json.loads(path.read_text())
    return loaded


def test_a_preempted_gang_reads_why_and_by_when_before_it_stops(
        make_plane: Callable[..., ControlPlane], out: Path) -> None:
    plane = make_plane(Profile.load("elastic"), CLASSES, GRACE)
    plane.start()
    plane.submit(reader_job("gang", out, replicas=2, priority="low", gpu=2))
    step_until(plane, lambda: all(started(out, "gang", i) for i in range(2)))
    told = {(out / f"gang-{i}-1.started").read_text() for i in range(2)}
    assert len(told) == 1 and told != {""}  # a rigid gang's tasks are told the file too
    before = time.time()
    plane.submit(reader_job("urgent", out, replicas=1, priority="high", gpu=4))
    step_until(plane, lambda: all(notice(out, "gang", i) for i in range(2)))
    for i in range(2):
        seen = notice(out, "gang", i)
        assert seen is not None
        document = seen["file"]
        assert isinstance(document, dict), seen
        assert document["job"] == "gang"
        got = document["notice"]
        assert "preempted for job 'urgent'" in got["reason"]
        assert before + GRACE <= got["deadline"] <= float(str(seen["at"])) + GRACE
        assert got["tasks"] == [{"group": "worker", "index": 0},
                                {"group": "worker", "index": 1}]
    step_until(plane, lambda: started(out, "urgent", 0))
    # Placed again later, the job's tasks find no stale notice: its file is gone.
    plane.cancel("urgent")
    step_until(plane, lambda: all(started(out, "gang", i, attempt=2) for i in range(2)))
    assert not Path(told.pop()).exists()
    (out / "release").touch()
    step_until(plane, finished(plane, "gang"))
    assert state_of(plane, "gang") is JobState.SUCCEEDED


def test_a_shrunk_elastic_job_reads_which_tasks_go(
        make_plane: Callable[..., ControlPlane], out: Path) -> None:
    plane = make_plane(Profile.load("elastic"), CLASSES, GRACE)
    plane.start()
    stretchy = Elasticity("worker", 1, 4, ScaleStep.POWER_OF_TWO)
    plane.submit(reader_job("stretchy", out, replicas=4, priority="low", elastic=stretchy))
    step_until(plane, lambda: all(started(out, "stretchy", i) for i in range(4)))
    plane.submit(reader_job("urgent", out, replicas=2, priority="high"))
    step_until(plane, lambda: all(notice(out, "stretchy", i) for i in (2, 3)))
    for i in (2, 3):
        seen = notice(out, "stretchy", i)
        assert seen is not None
        document = seen["file"]
        assert isinstance(document, dict), seen
        assert document["worldSize"] == 2  # the size it shrinks to, beside the notice
        got = document["notice"]
        assert got["reason"].startswith("elastic surplus taken (down to 2) for job 'urgent'")
        assert got["tasks"] == [{"group": "worker", "index": 2},
                                {"group": "worker", "index": 3}]
    assert notice(out, "stretchy", 0) is None and notice(out, "stretchy", 1) is None
    (out / "release").touch()
    step_until(plane, finished(plane, "stretchy"))
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
