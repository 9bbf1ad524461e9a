"""Seed 002's TrainingJob run for real: `examples/trainingjob/` under the live control loop
and the local executor. A master, two parameter servers and elastic trainers (2 to 4) find
each other through Shoal's per-role endpoints (SHOAL_<GROUP>_HOSTS, SHOAL_TASK_PORT); the
trainers train, and once they have all ended the trainer group's `TaskCompleted:
CompleteJob` policy ends the job SUCCEEDED and its master and servers, which never end on
their own, are stopped with SIGTERM (their handlers run) and end CANCELLED, not FAILED.

Every wait is on a condition (the job's stored state); the deadline is a safety net."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from control_support import PY, finished, state_of, stdout_of, step_until

from shoal.api import Job, JobState, TaskState
from shoal.control import ControlPlane
from shoal.spec import load_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "trainingjob"
STEPS = 40


def example_job(out: Path) -> Job:
    """The example as written, its programs run by this interpreter from the checkout, each
    trainer writing what it did under `out`."""
    (job,) = load_text((EXAMPLE / "trainingjob.yaml").read_text()).jobs
    assert job.group("trainer").env["STEPS"] == str(STEPS)
    groups = tuple(replace(g, command=(PY, *g.command[1:]), working_dir=str(ROOT),
                           env={**g.env, "RESULT_DIR": str(out)}) for g in job.groups)
    return replace(job, groups=groups)


def test_trainers_find_the_pservers_train_and_their_end_stops_master_and_pservers(
        make_plane: Callable[..., ControlPlane], out: Path) -> None:
    plane = make_plane(None, (), 10.0)  # a grace long enough for the SIGTERM handlers
    plane.start()
    plane.submit(example_job(out))
    step_until(plane, finished(plane, "trainingjob"))
    assert state_of(plane, "trainingjob") is JobState.SUCCEEDED

    stored = plane.repository.get_job("trainingjob")
    assert stored is not None
    states = {(t.group, t.index): t.state for t in stored.tasks}
    assert [states[("master", 0)], states[("pserver", 0)], states[("pserver", 1)]] == \
        [TaskState.CANCELLED] * 3
    trained = sorted(i for (g, i), s in states.items() if g == "trainer"
                     and s is TaskState.SUCCEEDED)
    assert trained[:2] == [0, 1]  # its minimum at least; grown ones too
    # Surplus never grown into is not waited for; on a loaded machine one may have been
    # bound just before the trainers finished, and is stopped with the master.
    assert all(states[("trainer", i)] in (TaskState.PENDING, TaskState.CANCELLED)
               for i in range(4) if i not in trained), states
    events = [e.cause for e in plane.repository.job_events("trainingjob")]
    assert any("task group 'trainer' completed" in cause for cause in events), events

    # The servers listened on the ports Shoal gave them, which the trainers were told.
    ports = [int(m.group(1)) for i in range(2) for m in
             [re.search(r"on port (\d+)", stdout_of(plane, "trainingjob", "pserver", i))]
             if m is not None]
    assert len(ports) == 2 and ports[0] != ports[1]
    results = [json.loads((out / f"trainer-{i}.json").read_text()) for i in trained]
    for result in results:
        assert result["pservers"] == [f"127.0.0.1:{p}" for p in ports]
        assert result["steps"] == STEPS
        assert result["loss"] < 0.1  # from about 70 at the start: the weights were learned
        assert max(result["trainersSeen"]) >= 2  # the membership file lists the trainers
    own = {r["endpoint"] for r in results} | {r["master"] for r in results[:1]}
    assert len(own) == len(results) + 1 and not own & {f"127.0.0.1:{p}" for p in ports}

    # Stopped, not killed: each server's SIGTERM handler ran, after every trainer's pushes.
    for i in range(2):
        said = stdout_of(plane, "trainingjob", "pserver", i)
        pushes = re.search(r"stopped by signal 15 after (\d+) pushes", said)
        assert pushes is not None, said
        assert int(pushes.group(1)) == STEPS * len(trained)
        learned = re.search(r"weights (\{.*\})", said)
        assert learned is not None
        for index, weight in ast.literal_eval(learned.group(1)).items():
            assert abs(weight - (index + 1)) < 0.01
    assert "stopped by signal 15" in stdout_of(plane, "trainingjob", "master", 0)
