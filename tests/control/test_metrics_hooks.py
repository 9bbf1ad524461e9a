"""What the control loop reports to its observer (`shoal.control.metrics_hooks`), in bounded
labels: evictions by kind (from the scheduler's own verbs), process ends by class, and the
declared virtual cluster a job's own one is counted in; a cycle's report of a preemption
and of first placements."""

from __future__ import annotations

from shoal.api import (
    Job,
    Node,
    PriorityClass,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
    VirtualCluster,
)
from shoal.api.decisions import Bind, Decisions
from shoal.control.metrics_hooks import (
    EvictionKind,
    ExitClass,
    cycle_report,
    declared_cluster,
    eviction_kind,
    exit_class,
    task_ends,
)
from shoal.executors.task import TaskPhase, TaskStatus
from shoal.scheduler import run_cycle
from shoal.scheduler.actions.reclaim import Reclamation
from shoal.scheduler.actions.victim_trials import VictimTrials
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.store.task_batches import TaskRecord


def test_an_evictions_reason_names_its_kind() -> None:
    assert eviction_kind(f"{VictimTrials.verb} for job 'x'") is EvictionKind.PREEMPTED
    assert eviction_kind(f"{Reclamation.verb} for team-a") is EvictionKind.RECLAIMED
    assert eviction_kind("elastic surplus taken (down to 2) for job 'x'") \
        is EvictionKind.ELASTIC_SURPLUS
    assert eviction_kind("shrunk from 4 to 2: its step rule") is EvictionKind.SHRUNK
    assert eviction_kind("service resized: fewer replicas") is EvictionKind.SERVICE_RESIZED
    assert eviction_kind("drained by an admin") is EvictionKind.OTHER


def test_a_process_end_is_classed() -> None:
    exited = TaskPhase.EXITED
    assert exit_class(TaskStatus(exited, exit_code=0)) is ExitClass.SUCCESS
    assert exit_class(TaskStatus(exited, exit_code=1)) is ExitClass.ERROR
    assert exit_class(TaskStatus(exited, exit_code=127)) is ExitClass.ERROR
    assert exit_class(TaskStatus(exited, exit_code=137)) is ExitClass.SIGNAL  # 128 + 9
    assert exit_class(TaskStatus(exited, signal=15)) is ExitClass.SIGNAL
    assert exit_class(TaskStatus(TaskPhase.LOST, detail="node gone")) is ExitClass.LOST


GPU = Resources.of(cpu=1000, memory=100, gpu=1)


def job(name: str, gpus: int, *, queue: str = "team", priority: str | None = None,
        at: float = 0.0, running: int = 0, own: VirtualCluster | None = None) -> Job:
    tasks = tuple(Task(name, "w", i, TaskState.RUNNING, node="n0", started=at)
                  for i in range(running))
    return Job(name, (TaskGroup("w", gpus, GPU),), queue=queue,
               scheduler_name=SchedulerName.DEFAULT, priority_class=priority, submitted=at,
               tasks=tasks, virtual_cluster=own)


def test_a_jobs_own_virtual_cluster_counts_in_the_declared_one_above_it() -> None:
    model = SchedulerModel([Node("n0", GPU.scale(4))], [VirtualCluster("team")])
    model.add_job(job("tune", 1, own=VirtualCluster("job:tune", parent="team")))
    run_cycle(model)  # placed: its own virtual cluster exists from now on
    assert "job:tune" in model.quota.queues
    assert declared_cluster(model, "team") == "team"
    assert declared_cluster(model, "job:tune") == "team"
    assert declared_cluster(model, "job:gone") == ""


def test_a_cycle_reports_its_preemption_and_first_placements() -> None:
    classes = [PriorityClass("high", 1000), PriorityClass("low", 10)]
    model = SchedulerModel([Node("n0", GPU.scale(2))], [VirtualCluster("team")], classes,
                           now=100.0)
    model.add_job(job("low", 2, priority="low", running=2))
    model.add_job(job("high", 2, priority="high", at=40.0))
    profile = Profile.load("elastic")
    decisions = run_cycle(model, profile)
    evicted = len(decisions.evictions)
    assert evicted >= 1
    report = cycle_report(model, decisions, 0.25, {})
    assert report.evictions == {(EvictionKind.PREEMPTED, "team"): evicted}
    assert report.decisions["evict"] == evicted and report.seconds == 0.25
    # A task bound for the first time waited since its job's submission; a retried one
    # (its second bind) is no new wait.
    model.now = 130.0
    first = TaskRecord(TaskRef("high", "w", 0), TaskState.BOUND, "n0", (0,), None, None, 1, None)
    again = TaskRecord(TaskRef("high", "w", 1), TaskState.BOUND, "n0", (1,), None, None, 2,
                       None)
    binds = Decisions(binds=[Bind(r.ref, "n0", r.gpus, GPU) for r in (first, again)])
    placed = cycle_report(model, binds, 0.0, {first.ref: first, again.ref: again})
    assert placed.queueing_delays == (90.0,)
    assert placed.decisions["bind"] == 2


def test_a_task_end_says_what_it_held_and_for_how_long() -> None:
    model = SchedulerModel([Node("n0", GPU.scale(4))], [VirtualCluster("team")])
    model.add_job(job("run", 2, at=10.0, running=2))
    end, unknown = task_ends(model, [
        (TaskRef("run", "w", 1), TaskStatus(TaskPhase.EXITED, exit_code=0)),
        (TaskRef("gone", "w", 0), TaskStatus(TaskPhase.LOST))], 25.0)
    assert (end.exit, end.virtual_cluster, end.resources, end.seconds) == (
        ExitClass.SUCCESS, "team", GPU, 15.0)
    assert (unknown.exit, unknown.virtual_cluster, unknown.seconds) == (ExitClass.LOST, "", 0.0)
