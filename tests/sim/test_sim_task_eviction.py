"""Task-level eviction in the simulator (issue 16): a default-scheduler job (placed task by
task, no gang) may lose single tasks to preempt; it keeps running on the others, the evicted
task waits and is placed again, and the work that task did since its last checkpoint is
lost and counted."""

from __future__ import annotations

import pytest

from shoal.api import Node, Resources
from shoal.scheduler import Profile
from shoal.sim.result import JobRecord, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob
from shoal.sim.work import WorkModel

CLUSTER_NODES = (Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8)),)
PREEMPTING = Profile.from_dict({"actions": "enqueue, allocate, preempt", "tiers": [
    {"plugins": [{"name": "priority"}, {"name": "gang"}]},
    {"plugins": [{"name": "predicates"}, {"name": "capacity"}, {"name": "placement"}]}]},
    "test.profileSpec")


class Cluster:
    nodes = CLUSTER_NODES
    virtual_clusters = ()
    priority_classes = ()


def pods() -> TraceJob:
    """Two independent 4-GPU tasks, 1000 s of work at 8 GPUs, low priority."""
    return TraceJob("pods", 0.0, 1000.0, 2, Resources.of(cpu=1000, gpu=4),
                    priority_class="experiment", gang=False)


def urgent(at: float = 100.0) -> TraceJob:
    return TraceJob("urgent", at, 200.0, 1, Resources.of(cpu=1000, gpu=4),
                    priority_class="production")


def run(jobs: list[TraceJob], work: WorkModel | None = None) -> SimResult:
    config = SimConfig(cycle_on_events=True, check_invariants=True,
                       work=work or WorkModel())
    return simulate(Trace.of(jobs, "hand"), Cluster(), PREEMPTING, config)


def record(result: SimResult, name: str) -> JobRecord:
    [found] = [j for j in result.jobs if j.name == name]
    return found


def test_a_default_job_loses_one_task_and_runs_on() -> None:
    result = run([pods(), urgent()])
    job, high = record(result, "pods"), record(result, "urgent")
    # urgent starts at once on the 4 GPUs one task of pods gave up, and is never delayed.
    assert high.first_start == pytest.approx(100.0)
    assert high.end == pytest.approx(300.0)
    assert job.preemptions == 1
    # pods never stopped: it held 8 GPUs until 100, 4 while urgent ran, 8 again after.
    assert [(h.start, h.gpus) for h in job.held] == [(0.0, 8), (100.0, 4), (300.0, 8)]
    # The evicted task's 100 s on 4 GPUs are lost (no checkpoints): 400 GPU-seconds, and
    # its half of the work done (50 s at full size) is to be done again. Linear speed-up:
    # 1000 - 100 + 50 = 950 left at 100; 200 s at half rate leaves 850; full rate from 300.
    assert job.gpu_seconds_lost == pytest.approx(400.0)
    assert job.end == pytest.approx(300.0 + 850.0)
    assert job.gpu_seconds_used == pytest.approx(sum(
        (h.end - h.start) * h.gpus for h in job.held))


def test_checkpointed_work_of_an_evicted_task_is_kept() -> None:
    # Checkpoints every 60 s: the task keeps 60 of its 100 s; 40 s on 4 GPUs are lost.
    result = run([pods(), urgent()], WorkModel(checkpoint_interval=60.0))
    job = record(result, "pods")
    assert job.gpu_seconds_lost == pytest.approx(160.0)
    # 1000 - 100 + 20 = 920 left at 100; 820 at 300.
    assert job.end == pytest.approx(300.0 + 820.0)


def test_without_a_preemptor_nothing_is_lost() -> None:
    job = record(run([pods()]), "pods")
    assert (job.preemptions, job.gpu_seconds_lost, job.end) == (0, 0.0, 1000.0)
