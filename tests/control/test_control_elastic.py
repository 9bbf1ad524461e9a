"""An elastic job under the live control loop, which does not resize jobs yet: it runs at its
minimum, its tasks see that world size and their ranks, and it succeeds once they have —
the surplus it never ran is not waited for. A profile that would resize is refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import finished, job, state_of, step_until

from shoal.api import Elasticity, JobState, Node, ScaleStep, TaskState
from shoal.control import ControlPlane
from shoal.control.loop import UnsupportedProfileError
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository


def test_an_elastic_job_runs_at_its_minimum_and_ends_with_it(plane: ControlPlane,
                                                             tmp_path: Path) -> None:
    code = (f"import json, os; json.dump({{k: os.environ[k] for k in ('RANK', 'WORLD_SIZE')}}, "
            f"open(os.path.join({str(tmp_path)!r}, 'rank-' + os.environ['RANK']), 'w'))")
    elastic = replace(job("stretchy", code, replicas=4),
                      elastic=Elasticity("worker", 2, 4, ScaleStep.POWER_OF_TWO))
    plane.submit(elastic)
    step_until(plane, finished(plane, "stretchy"))
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    seen = sorted(sorted(json.loads(p.read_text()).items()) for p in tmp_path.glob("rank-*"))
    assert seen == [[("RANK", "0"), ("WORLD_SIZE", "2")], [("RANK", "1"), ("WORLD_SIZE", "2")]]
    stored = plane.repository.get_job("stretchy")
    assert stored is not None
    assert [t.state for t in stored.tasks] == [TaskState.SUCCEEDED, TaskState.SUCCEEDED,
                                               TaskState.CANCELLED, TaskState.CANCELLED]


def test_a_profile_that_resizes_is_refused(repo: Repository, node: Node,
                                          tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "shoal")
    with pytest.raises(UnsupportedProfileError,
                       match="uses elastic, preempt, reclaim: the control loop does not"):
        ControlPlane(repo, executor, [node], Profile.load("elastic"))
