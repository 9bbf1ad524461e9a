"""The scenario runner: load a cluster and its jobs, run cycles until nothing changes, and
report what the scheduler decided and why jobs wait.

It is the smallest driver of the core: after each cycle it applies the decisions to its own
copy of the jobs (a bound task starts running at once; an evicted task goes back to pending),
moving every task and job through the lifecycle tables so an illegal decision fails loudly; a
partial admission's `Resize` lowers the job's replicas, as the control plane stores it.
The clock is the cycle number. Its JSON output is a stable, documented interface
(docs/scenario-output.md) that other tools read.

Gates (`shoal.scheduler.gates`): a job that depends on jobs that have not succeeded — in the
scenario, a dependency succeeded when its `status.tasks` all say so — or that is held
(`spec.hold`) is not scheduled; it is reported pending with a `Dependency` or `Held` reason.
Tasks never end here, so no dependency succeeds during the run. A dependency on a job the
scenario does not hold, on the job itself or in a cycle is an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from shoal.api.decisions import Bind, Decisions, Evict, Pending, Reserve, Resize
from shoal.api.lifecycle import JOB_LIFECYCLE, TASK_LIFECYCLE, JobState, TaskState
from shoal.api.objects import Job, Task, VirtualCluster, job_of_virtual_cluster
from shoal.core.snapshot import Snapshot, SnapshotError
from shoal.core.usage import UsageLedger, job_holdings
from shoal.scheduler.cycle import run_cycle
from shoal.scheduler.gates import Gate, Gates, dependency_issues
from shoal.scheduler.plugins.usage import usage_half_life
from shoal.scheduler.profile import Profile
from shoal.spec import SpecBundle

#: Version of the JSON document `ScenarioResult.to_dict` produces.
OUTPUT_VERSION = "shoal/v1"


@dataclass
class CycleRecord:
    cycle: int
    binds: list[Bind]
    evictions: list[Evict]
    resizes: list[Resize]
    reservations: list[Reserve] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {"cycle": self.cycle,
               "binds": [b.to_dict() for b in self.binds],
               "evictions": [e.to_dict() for e in self.evictions],
               "resizes": [r.to_dict() for r in self.resizes]}
        if self.reservations:
            out["reservations"] = [r.to_dict() for r in self.reservations]
        return out


@dataclass
class ScenarioResult:
    profile: str
    cycles: list[CycleRecord] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    converged: bool = False

    @property
    def binds(self) -> list[Bind]:
        return [b for c in self.cycles for b in c.binds]

    @property
    def evictions(self) -> list[Evict]:
        return [e for c in self.cycles for e in c.evictions]

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": OUTPUT_VERSION,
            "kind": "ScheduleResult",
            "profile": self.profile,
            "converged": self.converged,
            "cycles": [c.to_dict() for c in self.cycles
                       if c.binds or c.evictions or c.resizes or c.reservations],
            "cyclesRun": len(self.cycles),
            "pending": [p.to_dict() for p in self.pending],
            "jobs": [_job_summary(j) for j in self.jobs],
        }


def run_scenario(bundle: SpecBundle, profile: Profile | None = None, max_cycles: int = 10
                 ) -> ScenarioResult:
    """Run cycles until one changes nothing (converged) or `max_cycles` have run."""
    profile = profile or (Profile.from_dict(bundle.profile, "SchedulerProfile")
                          if bundle.profile is not None else Profile.default())
    jobs = {j.name: j for j in bundle.jobs}
    gates, gated = _gate(bundle.jobs)
    virtual_clusters = {vc.name: vc for vc in bundle.virtual_clusters}
    result = ScenarioResult(profile.name)
    # Decayed usage per virtual cluster and user, charged for what runs as the clock moves
    # (issue 17): tasks recorded as running since a `startTime` are charged from it.
    usage = UsageLedger(usage_half_life(profile))
    for cycle in range(1, max_cycles + 1):
        usage = usage.charged(job_holdings(jobs.values()), float(cycle))
        snapshot = Snapshot(bundle.nodes, tuple(j for j in jobs.values() if j.name not in gated),
                            tuple(virtual_clusters.values()), bundle.priority_classes,
                            now=float(cycle), resource_flavors=bundle.resource_flavors,
                            usage=usage)
        decisions = run_cycle(snapshot, profile)
        result.cycles.append(CycleRecord(cycle, decisions.binds, decisions.evictions,
                                         decisions.resizes, decisions.reservations))
        # Carvings are recorded, as the control plane stores them, so that the next cycle's
        # fresh model restores them where they are.
        record_reservations(decisions.reservations, virtual_clusters, jobs)
        result.pending = [*decisions.pending,
                          *(Pending(name, reason) for name, reason in gates.reasons().items())]
        if not decisions.changes_anything():
            result.converged = True
            break
        jobs = apply(jobs, decisions, now=float(cycle))
    result.jobs = list(jobs.values())
    return result


def _gate(jobs: tuple[Job, ...]) -> tuple[Gates, set[str]]:
    """The gates of the scenario's jobs and the names of those they keep out; raises
    SnapshotError for a dependency on no job of the scenario, on itself, or in a cycle."""
    issues = dependency_issues(jobs, {})
    if issues:
        raise SnapshotError("; ".join(f"job {jobs[i.job].name!r}: {i.path}: "
                                      + i.message + (" in the scenario"
                                                     if i.message.startswith("no job") else "")
                                      for i in issues))
    states = {j.name: _state(j) for j in jobs}
    gates = Gates()
    gated = {j.name for j in jobs if (j.depends_on or j.held) and not j.tasks
             and gates.admit(j, states.get).gate is not Gate.OPEN}
    return gates, gated


def _state(job: Job) -> JobState:
    """A scenario job's state: SUCCEEDED when its recorded tasks all succeeded."""
    if job.tasks and len(job.tasks) == job.replicas and all(
            t.state is TaskState.SUCCEEDED for t in job.tasks):
        return JobState.SUCCEEDED
    return job.state


def record_reservations(changes: Iterable[Reserve], virtual_clusters: dict[str, VirtualCluster],
                        jobs: dict[str, Job]) -> None:
    """Keep the carvings as the control plane stores them — a declared virtual cluster's in
    it, a job's own in the job — so that a model rebuilt from them restores them."""
    for change in changes:
        owner = job_of_virtual_cluster(change.virtual_cluster)
        if owner is None:
            if change.virtual_cluster in virtual_clusters:
                virtual_clusters[change.virtual_cluster] = replace(
                    virtual_clusters[change.virtual_cluster], reservation=change.placements)
        elif owner in jobs:
            own = jobs[owner].virtual_cluster
            if own is not None:
                jobs[owner] = replace(jobs[owner], virtual_cluster=replace(
                    own, reservation=change.placements))


def apply(jobs: dict[str, Job], decisions: Decisions, now: float) -> dict[str, Job]:
    """The jobs after the cycle's decisions took effect (a bound task runs at once)."""
    tasks: dict[str, dict[tuple[str, int], Task]] = {
        name: {(t.group, t.index): t for t in job.tasks} for name, job in jobs.items()}
    for evict in decisions.evictions:
        key = (evict.task.group, evict.task.index)
        task = tasks[evict.task.job][key]
        TASK_LIFECYCLE.move(task.state, TaskState.RELEASING, evict.reason)
        TASK_LIFECYCLE.move(TaskState.RELEASING, TaskState.PENDING, "stopped after eviction")
        del tasks[evict.task.job][key]
    for bind in decisions.binds:
        key = (bind.task.group, bind.task.index)
        current = tasks[bind.task.job].get(key)
        state = current.state if current is not None else TaskState.PENDING
        TASK_LIFECYCLE.move(state, TaskState.BOUND, f"bound to {bind.node}")
        TASK_LIFECYCLE.move(TaskState.BOUND, TaskState.RUNNING, "started")
        tasks[bind.task.job][key] = Task(bind.task.job, bind.task.group, bind.task.index,
                                         TaskState.RUNNING, bind.node, bind.gpus, now)
    admitted = {(r.job, r.group): r.replicas for r in decisions.resizes
                 if r.partial_admission}
    out: dict[str, Job] = {}
    for name, given in jobs.items():
        # Partially admitted: the job has the admitted replicas for good, as the control
        # plane stores it.
        job = replace(given, groups=tuple(
            replace(g, replicas=admitted.get((name, g.name), g.replicas))
            for g in given.groups)) if any(n == name for n, _ in admitted) else given
        records = tuple(sorted(tasks[name].values(), key=lambda t: (t.group, t.index)))
        running = sum(1 for t in records if t.state in (TaskState.BOUND, TaskState.RUNNING))
        job_state = job.state
        # Tasks that ended for good count toward the gang minimum (`JobInfo.ready`), each
        # group's own minimum included.
        target = JobState.RUNNING if running and job.gang_met(
            t for t in records if t.state in (TaskState.BOUND, TaskState.RUNNING)
            or t.state.terminal) else JobState.PENDING
        if target is not job_state:
            JOB_LIFECYCLE.move(job_state, target, "gang minimum placed" if target is
                               JobState.RUNNING else "fell below its gang minimum")
            job_state = target
        out[name] = replace(job, tasks=records, state=job_state)
    return out


def _job_summary(job: Job) -> dict[str, Any]:
    holding = [t for t in job.tasks if t.state.holds_resources]
    return {"name": job.name, "state": job.state.value, "queue": job.queue,
            "replicas": job.replicas, "running": len(holding),
            "tasks": [{"task": str(t.ref), "node": t.node, "gpus": list(t.gpus)}
                      for t in holding]}
