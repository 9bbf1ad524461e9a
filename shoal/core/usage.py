"""Decayed usage per virtual cluster and user (issue 17, seed 002's fairness across queues
and users): what each user's running tasks held in each virtual cluster, in resource-seconds
per resource, halved every `half_life` seconds — Slurm's `PriorityDecayHalfLife`, Kueue's
admission fair sharing (`usageHalfLifeTime`).

One entry per (virtual cluster, user), nothing per job: the ledger stays as small as the
number of users that ran anything recently. A virtual cluster's usage is the sum of its
users' (decay is linear, so the sum of decayed values is the decayed sum) and a parent's is
its subtree's, summed where it is read (`shoal.scheduler.plugins.usage`).

All values refer to one instant, `at` (the last charge): reading at a later time scales
every entry by the same factor, so the *order* of entries never changes with the clock
alone — only charging changes it. No clock here: the drivers own the ledger, charge it with
their own time (the live control plane each cycle, persisted in the store; the simulator on
its simulated clock) and hand it to the core in the snapshot or model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from shoal.api.flavors import unflavored
from shoal.api.objects import Job
from shoal.api.resources import Resources

DEFAULT_HALF_LIFE = 7 * 24 * 3600.0
"""Slurm's default `PriorityDecayHalfLife` (7 days)."""
MAX_ENTRIES = 10_000
"""At most this many (virtual cluster, user) entries: beyond, the least used are dropped."""
FORGET_BELOW = 1e-3
"""An entry whose every resource decayed below this many resource-seconds is dropped."""
NO_USER = ""
"""The user of jobs submitted without one: they count as one user together."""
_MILLI = 1000.0
_MIB_PER_GIB = 1024.0


@dataclass(frozen=True, slots=True, order=True)
class UsageKey:
    vc: str
    user: str


@dataclass(frozen=True, slots=True)
class Used:
    """Decayed resource-seconds: GPU-seconds, core-seconds, GiB-seconds."""

    gpu: float = 0.0
    cpu: float = 0.0
    memory: float = 0.0

    @staticmethod
    def of(resources: Resources, seconds: float) -> Used:
        return Used(resources.gpu * seconds, resources.cpu / _MILLI * seconds,
                    resources.memory / _MIB_PER_GIB * seconds)

    def __add__(self, other: Used) -> Used:
        return Used(self.gpu + other.gpu, self.cpu + other.cpu, self.memory + other.memory)

    def scaled(self, factor: float) -> Used:
        return Used(self.gpu * factor, self.cpu * factor, self.memory * factor)

    def negligible(self) -> bool:
        return max(self.gpu, self.cpu, self.memory) < FORGET_BELOW


@dataclass(frozen=True, slots=True)
class UsageWeights:
    """How resources add up to one number: GPU ≫ CPU ≫ memory, as seed 002's resource
    score. Defaults: a GPU-second weighs 1, a core-second 0.01, a GiB-second 0.001 — a
    100-core CPU job counts like one GPU."""

    gpu: float = 1.0
    cpu: float = 0.01
    memory: float = 0.001

    def of(self, used: Used) -> float:
        return self.gpu * used.gpu + self.cpu * used.cpu + self.memory * used.memory


@dataclass(frozen=True, slots=True)
class Holding:
    """What one running task holds, for whom: the unit the drivers charge."""

    vc: str
    user: str
    resources: Resources
    started: float | None
    """When it started running; None: not yet (bound, launching): charged nothing."""


@dataclass(frozen=True, slots=True)
class TaskRate:
    """What one running task charges per second it runs, for whom: `Used.of`'s factors
    (GPUs, cores, GiB) worked out once, not at every charge."""

    key: UsageKey
    gpu: float
    cpu: float
    memory: float

    @staticmethod
    def of(vc: str, user: str, resources: Resources) -> TaskRate | None:
        """None for a task that holds nothing (`charged` charges it nothing)."""
        if resources.is_zero():
            return None
        # The same operations as `Used.of`: resource-seconds are these times the seconds.
        return TaskRate(UsageKey(vc, user), float(resources.gpu), resources.cpu / _MILLI,
                        resources.memory / _MIB_PER_GIB)


@dataclass(frozen=True)
class UsageLedger:
    """Decayed usage per (virtual cluster, user) as of `at`. Immutable: `charged` returns a
    new ledger."""

    half_life: float = DEFAULT_HALF_LIFE
    at: float | None = None
    """When it was last charged; None: never (a task is then charged since it started)."""
    entries: Mapping[UsageKey, Used] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not math.isfinite(self.half_life) or self.half_life <= 0:
            raise ValueError(f"half-life must be a positive number of seconds, got "
                             f"{self.half_life!r}")
        if self.at is not None and not math.isfinite(self.at):
            raise ValueError(f"usage time must be finite, got {self.at!r}")

    def __len__(self) -> int:
        return len(self.entries)

    def factor(self, at: float) -> float:
        """How much of a value as of `at` is left at `at` (never above 1: a clock that
        went back makes nothing grow)."""
        if self.at is None or at <= self.at:
            return 1.0
        return math.exp2(-(at - self.at) / self.half_life)

    def value(self, vc: str, user: str, at: float) -> Used:
        used = self.entries.get(UsageKey(vc, user))
        return Used() if used is None else used.scaled(self.factor(at))

    def vc_value(self, vc: str, at: float) -> Used:
        """The virtual cluster's own usage: its users' summed (not its children's)."""
        out = Used()
        for key, used in self.entries.items():
            if key.vc == vc:
                out = out + used
        return out.scaled(self.factor(at))

    def charge(self, charges: Iterable[tuple[UsageKey, Used]], at: float) -> UsageLedger:
        """Every entry decayed to `at`, plus `charges` (resource-seconds used by then)."""
        at = at if self.at is None else max(at, self.at)
        factor = self.factor(at)
        entries = {k: v.scaled(factor) for k, v in self.entries.items()}
        for key, used in charges:
            entries[key] = entries.get(key, Used()) + used
        return UsageLedger(self.half_life, at, _bounded(entries))

    def charged(self, holdings: Iterable[Holding], now: float) -> UsageLedger:
        """Charge each running task for the time it ran since the last charge (or since it
        started, if later). A task that ended between two charges is not charged for that
        last stretch: at most one cycle's interval per task."""
        return self.charged_rates(
            ((TaskRate.of(h.vc, h.user, h.resources), h.started) for h in holdings), now)

    def charged_rates(self, tasks: Iterable[tuple[TaskRate | None, float | None]],
                      now: float) -> UsageLedger:
        """`charged`, each running task given as what it charges per second and when it
        started (`TaskRate`; None: it holds nothing). The drivers' path: a model keeps each
        job's rates (`shoal.scheduler.usage_rates`), so a charge builds no value per task.

        The arithmetic is `charge`'s with the same operands in the same order — every entry
        scaled, then each task's resource-seconds added to its entry in turn — so the
        ledger comes out the same to the last bit: only the objects per task are gone."""
        last = self.at
        at = now if last is None else max(now, last)
        factor = self.factor(at)
        sums: dict[UsageKey, list[float]] = {
            k: [v.gpu * factor, v.cpu * factor, v.memory * factor]
            for k, v in self.entries.items()}
        for rate, started in tasks:
            if rate is None or started is None:
                continue
            seconds = now - (started if last is None else max(started, last))
            if seconds <= 0:
                continue
            row = sums.get(rate.key)
            if row is None:
                # `Used() + used`: 0.0 + x is x for every x a charge makes (never -0.0).
                sums[rate.key] = [rate.gpu * seconds, rate.cpu * seconds,
                                  rate.memory * seconds]
            else:
                row[0] += rate.gpu * seconds
                row[1] += rate.cpu * seconds
                row[2] += rate.memory * seconds
        return UsageLedger(self.half_life, at,
                           _bounded({k: Used(g, c, m) for k, (g, c, m) in sums.items()}))

    def with_half_life(self, half_life: float) -> UsageLedger:
        """The same values, decaying from now on with another half-life (a profile changed
        its `halfLife`)."""
        return UsageLedger(half_life, self.at, self.entries)


def job_holdings(jobs: Iterable[Job]) -> Iterator[Holding]:
    """What the tasks of `jobs` hold, as recorded in them (a driver that keeps jobs, not a
    model: the scenario runner)."""
    for job in jobs:
        if job.state.terminal:
            continue
        user = job.user or NO_USER
        for task in job.tasks:
            if task.state.holds_resources:
                yield Holding(job.queue, user, unflavored(job.group(task.group).resources),
                              task.started)


def _bounded(entries: dict[UsageKey, Used]) -> dict[UsageKey, Used]:
    kept = {k: v for k, v in entries.items() if not v.negligible()}
    if len(kept) <= MAX_ENTRIES:
        return kept
    weights = UsageWeights()
    ranked = sorted(kept.items(), key=lambda kv: (-weights.of(kv[1]), kv[0]))
    return dict(ranked[:MAX_ENTRIES])
