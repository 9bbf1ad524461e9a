"""The multi-cluster what-if (issue 19, item 6): one trace replayed across several simulated
member clusters, each driven by Shoal's own scheduling core exactly as `shoal sim` drives
one (`shoal.sim.multicluster_member`), with the pure dispatch policy
(`shoal.federation.dispatch`) deciding each job's copies on the same simulated clock.

Policies (`McPolicy`):

- `single`: each job is sent to its home member only (no copies, nothing cancelled);
- `fac` and `fac-priority`: each job is sent to every member at its submission time, as
  `<job>-<alias>`; the dispatcher polls every `poll_interval` seconds, feeds what it saw to
  `decide`, and cancels what it says at that poll — a decision due between two polls (a
  guard or survival window ending) acts at the next one.

What the dispatcher sees of a copy is what its member reports: its state, and the member's
own start and end times (as Slurm's `StartTime` or OpenPAI's launch time). A copy that its
member preempted after it started still counts as started. A copy's work on member m is
the job's trace duration × speed(home) / speed(m): the trace measured it at home.

Per policy (`McSummary`): mean and p95 queueing delay (submission to the start of the kept
copy), mean JCT (submission to its end), `preferred_cluster_share` (jobs kept on a member
of the highest priority) and `wasted_gpu_seconds_fraction`: the GPU-seconds of every copy
that started and was not kept — cancelled after it started, or run to its end beside the
kept one (two copies can end at once before a guard is over) — over every GPU-second used
by every copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from shoal.api.federation import CopyState, DispatchPolicy, MemberCluster
from shoal.federation.dispatch import CopyObservation, DispatchRules, decide
from shoal.scheduler.profile import Profile
from shoal.sim.multicluster_member import MemberSimulator
from shoal.sim.simulator import ClusterLike, SimConfig
from shoal.sim.trace import Trace, TraceJob


class McPolicy(StrEnum):
    SINGLE = "single"
    FAC = "fac"
    FAC_PRIORITY = "fac-priority"


@dataclass(frozen=True)
class SimMember:
    """One simulated member: who it is, its nodes and how fast its GPUs are."""

    cluster: MemberCluster
    description: ClusterLike
    speed: float = 1.0
    """Work per second relative to the others (a job's duration divides by it)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ValueError(f"members[{self.cluster.alias}].speed: must be a positive "
                             f"number, not {self.speed!r}")


@dataclass(frozen=True, slots=True)
class McJob:
    """A job of the replayed trace and the member it came from."""

    job: TraceJob
    home: str


@dataclass(frozen=True)
class McConfig:
    policy: McPolicy
    guard_time_running: float = 60.0
    time_scale: float = 30.0
    poll_interval: float = 30.0
    sim: SimConfig = field(default_factory=SimConfig)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.poll_interval) and self.poll_interval > 0):
            raise ValueError(f"poll_interval: must be a positive number of seconds, "
                             f"not {self.poll_interval!r}")
        self.rules()  # checks the guard and the time scale

    def rules(self) -> DispatchRules:
        policy = DispatchPolicy.FAC_PRIORITY if self.policy is McPolicy.FAC_PRIORITY \
            else DispatchPolicy.FAC
        return DispatchRules(policy, self.guard_time_running, self.time_scale)


@dataclass(frozen=True, slots=True)
class McJobRecord:
    name: str
    home: str
    submit_time: float
    cluster: str | None
    """The member whose copy was kept; None: none was (the job never ran)."""
    start: float | None
    end: float | None
    copies_started: int
    wasted_gpu_seconds: float


@dataclass(frozen=True)
class McResult:
    policy: McPolicy
    members: tuple[MemberCluster, ...]
    records: tuple[McJobRecord, ...]
    gpu_seconds: float
    """Every GPU-second held by every copy, kept or cancelled."""
    wasted_gpu_seconds: float
    cancels: int
    polls: int


def copy_name(job: str, alias: str) -> str:
    """The copy's name on its member: `<name>-<alias>` (seed 000)."""
    return f"{job}-{alias}"


class MultiClusterSim:
    """Replays `jobs` over `members` under one policy (module text)."""

    def __init__(self, jobs: Sequence[McJob], members: Sequence[SimMember], profile: Profile,
                 config: McConfig) -> None:
        aliases = [m.cluster.alias for m in members]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"members: aliases must be unique, got {aliases}")
        for j in jobs:
            if j.home not in aliases:
                raise ValueError(f"jobs[{j.job.name}].home: {j.home!r} is not a member "
                                 f"({', '.join(aliases)})")
        self.jobs = tuple(sorted(jobs, key=lambda j: (j.job.submit_time, j.job.name)))
        self.members = {m.cluster.alias: m for m in members}
        self.clusters = tuple(m.cluster for m in members)
        self.config = config
        self.rules = config.rules()
        speed = {m.cluster.alias: m.speed for m in members}
        copies: dict[str, list[TraceJob]] = {a: [] for a in aliases}
        self.targets: dict[str, tuple[str, ...]] = {}
        for j in self.jobs:
            where = (j.home,) if config.policy is McPolicy.SINGLE else tuple(aliases)
            self.targets[j.job.name] = where
            for alias in where:
                work = j.job.duration * speed[j.home] / speed[alias]
                copies[alias].append(replace(j.job, name=copy_name(j.job.name, alias),
                                             duration=work))
        self.sims = {a: MemberSimulator(Trace(tuple(copies[a]), f"{a}"),
                                        self.members[a].description, profile, config.sim)
                     for a in aliases}
        self.owner = {copy_name(j.job.name, a): (j.job.name, a)
                      for j in self.jobs for a in self.targets[j.job.name]}
        self.observed: dict[str, dict[str, CopyObservation]] = {}
        self.winner: dict[str, str] = {}
        self.wake: dict[str, float] = {}
        self.cancels = 0
        self.polls = 0

    def run(self) -> McResult:
        for j in self.jobs:
            for alias in self.targets[j.job.name]:
                self.sims[alias].submit(copy_name(j.job.name, alias), j.job.submit_time)
        if self.config.policy is McPolicy.SINGLE:
            for sim in self.sims.values():
                sim.advance(math.inf)
            for j in self.jobs:
                self.winner[j.job.name] = j.home
        else:
            self._race()
        return self._result()

    def _race(self) -> None:
        interval = self.config.poll_interval
        submitted = 0
        t = 0.0
        while True:
            for sim in self.sims.values():
                sim.advance(t)
            self.polls += 1
            due: set[str] = set()
            while submitted < len(self.jobs) and self.jobs[submitted].job.submit_time <= t:
                name = self.jobs[submitted].job.name
                self.observed[name] = {a: CopyObservation(a) for a in self.targets[name]}
                due.add(name)
                submitted += 1
            for sim in self.sims.values():
                for copy in sim.take_changed():
                    job, _ = self.owner[copy]
                    if job in self.observed:
                        due.add(job)
            due.update(job for job, at in self.wake.items() if at <= t)
            for job in sorted(due):
                self._poll(job, t)
            later = [x for x in (s.next_event() for s in self.sims.values()) if x is not None]
            later += self.wake.values()
            if submitted < len(self.jobs):
                later.append(self.jobs[submitted].job.submit_time)
            if not later:
                break  # nothing left to happen: every race is over or can never move
            t = max(t + interval, math.ceil(min(later) / interval) * interval)

    def _poll(self, job: str, t: float) -> None:
        seen = self.observed.get(job)
        if seen is None:
            return
        for alias in self.targets[job]:
            now = self.sims[alias].copy(copy_name(job, alias))
            running = now.started if now.state is not CopyState.WAITING else None
            seen[alias] = CopyObservation(alias, now.state, running, now.ended)
        out = decide(self.clusters, self.rules, tuple(seen.values()), t)
        for cancel in out.cancels:
            sim = self.sims[cancel.alias]
            name = copy_name(job, cancel.alias)
            if name not in sim.cancelled:
                sim.cancel(name, t)
                self.cancels += 1
        self.wake.pop(job, None)
        if out.winner is not None:
            # Every other copy is stopped in this very poll: the race is over.
            self.winner[job] = out.winner
            del self.observed[job]
        elif out.state.is_final:
            del self.observed[job]
        elif out.wake_at is not None:
            self.wake[job] = out.wake_at

    def _result(self) -> McResult:
        records = []
        total = wasted = 0.0
        for j in self.jobs:
            name = j.job.name
            kept = self.winner.get(name)
            started = 0
            lost = 0.0
            for alias in self.targets[name]:
                copy = self.sims[alias].copy(copy_name(name, alias))
                total += copy.gpu_seconds
                if copy.started is not None:
                    started += 1
                    if alias != kept:
                        lost += copy.gpu_seconds
            wasted += lost
            mine = self.sims[kept].copy(copy_name(name, kept)) if kept is not None else None
            records.append(McJobRecord(name, j.home, j.job.submit_time, kept,
                                       mine.started if mine else None,
                                       mine.ended if mine else None, started, lost))
        return McResult(self.config.policy, self.clusters, tuple(records), total, wasted,
                        self.cancels, self.polls)


def simulate_multicluster(jobs: Sequence[McJob], members: Sequence[SimMember],
                          profile: Profile, config: McConfig) -> McResult:
    return MultiClusterSim(jobs, members, profile, config).run()
