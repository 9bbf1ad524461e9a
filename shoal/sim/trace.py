"""The simulator's trace model: `TraceJob`, `Trace`, `TraceError`, and the gang shape rule.

A trace is what the simulator replays: jobs that arrive at given times and need a given
amount of work. Every loader in `shoal.sim.loaders` turns one public format into a `Trace`;
this module owns the model they share and nothing about any one format.

Conventions every loader follows:

- `submit_time` is in seconds since the trace's start; loaders shift times so that the
  earliest submission is `0.0` (the first job of the raw file may be later than its zero).
- `duration` is the seconds of work the job needs at its requested size (always > 0).
- `Trace.jobs` is sorted by `(submit_time, name)` and names are unique within the trace.
- A row that cannot be read raises `TraceError` naming the file, the 1-based line and the
  column (or, in YAML, the field path), e.g.
  `philly.csv:17: column 'duration': must be a positive number, got 'abc'`.

**Gang shape rule.** Traces such as Philly and ITP give only a job's total GPU count G; the
job becomes a gang of identical tasks on a cluster whose nodes have N GPUs
(`gpus_per_node`):

- G <= N: one task of G GPUs (the job fits on one node);
- N divides G: G // N tasks of N GPUs (whole nodes);
- otherwise: G tasks of 1 GPU (e.g. 12 GPUs on 8-GPU nodes), so it can spread freely.

Each task gets `cpu_per_gpu` millicores and `memory_per_gpu` MiB per GPU it holds (defaults:
4 cores = 4000 millicores and 16 GiB = 16384 MiB per GPU). A job of 0 GPUs becomes one task
of 1 CPU (1000 millicores) and 1 GiB (1024 MiB).

Every trace job becomes a gang (`schedulerName: shoal`) whose minimum is all its tasks: the
traces record jobs that ran at their full size, so they start whole or not at all — unless
it is made elastic (`TraceJob.elastic`, seed 001): then its gang minimum is the elastic
minimum, it runs at any size its step rule allows up to its requested replicas, and its
progress rate follows the GPUs it holds through the speed-up curve (`shoal.sim.work`). A
resize costs no work in this model. A job built with `gang=False` is a default-scheduler
job instead (`schedulerName: default`, issue 16): placed task by task, running from its
first task, and preempt and reclaim may take single tasks from it (`shoal.sim.simulator`
accounts the work such a task loses). No trace format records one; tests build them.

A job with `service` set is an online service (seed 002, `shoal.api.services`): it never
ends (its `duration` is infinite), gets the `production` priority class unless it names
one, is never preempted, and with quiet windows it is elastic down to its quietest size —
the services action sizes it on the simulated clock, whose 0 is midnight (UTC). Native
traces say `kind: Service` or `spec.service` (`shoal.sim.loaders.native`). The simulation
ends once every job that can end has ended.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from shoal.api import DEFAULT_QUEUE, Elasticity, Job, Resources, SchedulerName, TaskGroup
from shoal.api.services import Service

#: The name of the one task group of every trace job.
WORKER_GROUP = "worker"
#: Defaults of the gang shape rule: per GPU, 4 cores and 16 GiB.
DEFAULT_CPU_PER_GPU = 4000
DEFAULT_MEMORY_PER_GPU = 16384
#: What a job of 0 GPUs gets: one task of 1 CPU and 1 GiB.
CPU_ONLY_TASK = Resources(cpu=1000, memory=1024)


class TraceError(ValueError):
    """A trace (or cluster description) that cannot be read.

    `source` is the file as given, `line` the 1-based line in it (None when the problem is
    the whole file), `column` the CSV column or YAML field path (None when no one column is
    at fault) and `message` what was expected and what was found."""

    def __init__(self, source: str, line: int | None, column: str | None, message: str,
                 *, what: str = "column") -> None:
        self.source = source
        self.line = line
        self.column = column
        self.message = message
        self.what = what
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        parts = [where]
        if self.column is not None:
            parts.append(f"{self.what} {self.column!r}")
        parts.append(self.message)
        return ": ".join(parts)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_error, (self.source, self.line, self.column, self.message, self.what))


def _rebuild_error(source: str, line: int | None, column: str | None, message: str,
                   what: str) -> TraceError:
    return TraceError(source, line, column, message, what=what)


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: when it arrives, how much work it is and the gang it asks for."""

    name: str
    """Unique in the trace; a valid job name (letters, digits, '_' and '-')."""
    submit_time: float
    """Seconds since the trace's start."""
    duration: float
    """Seconds of work at the requested size (> 0)."""
    replicas: int
    """Tasks in the gang (>= 1)."""
    per_task: Resources
    """The request of each task."""
    queue: str = DEFAULT_QUEUE
    """The job's virtual cluster."""
    user: str | None = None
    priority_class: str | None = None
    model: str | None = None
    """Application or model name, for per-model scalability tables."""
    node_selector: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Labels a node must carry (e.g. `{gpu-type: T4}`); must not be mutated."""
    elastic: Elasticity | None = None
    """Its task group `worker` ranges over [min, replicas] (seed 001); None: rigid."""
    gang: bool = True
    """False: a default-scheduler job (task by task, no gang minimum) rather than a gang."""
    checkpoint_interval: float | None = None
    """Seconds between its checkpoints (`spec.checkpointInterval` of a native trace's job);
    None: the simulator's `--checkpoint`, if any (`shoal.sim.work`)."""
    service: Service | None = None
    """An online service that never ends (its `duration` is `math.inf`); None: a job."""
    freezing_window: float | None = None
    """Seconds after a change of size during which the fairshare action leaves it alone
    (`spec.freezingWindow`); None: the profile's default."""
    depends_on: tuple[str, ...] = ()
    """Jobs of the trace that must have finished before it is scheduled (`spec.dependsOn`,
    afterok): it enters the scheduler's model at the instant the last one finishes."""
    held: bool = False
    """Held (`spec.hold`): never scheduled (a trace releases nothing)."""
    time_limit: float | None = None
    """Seconds a run may last (`spec.timeLimit`): a run still going then ends the job, failed
    (`shoal.api.time_limits`); None: no limit."""

    def __post_init__(self) -> None:
        if self.service is not None and self.duration != math.inf:
            raise ValueError(f"job {self.name}: a service never ends: its duration must be "
                             f"math.inf, got {self.duration}")
        if self.service is None and not 0 < self.duration < math.inf:
            raise ValueError(f"job {self.name}: duration must be a positive number, "
                             f"got {self.duration}")
        if not math.isfinite(self.submit_time):
            raise ValueError(f"job {self.name}: submit_time must be a finite number, "
                             f"got {self.submit_time}")
        if self.time_limit is not None and not 0 < self.time_limit < math.inf:
            raise ValueError(f"job {self.name}: time_limit must be a positive number of "
                             f"seconds, got {self.time_limit}")
        window = self.freezing_window
        if window is not None and not 0 <= window < math.inf:
            raise ValueError(f"job {self.name}: freezing_window must be a non-negative "
                             f"number of seconds, got {window}")
        if self.replicas < 1:
            raise ValueError(f"job {self.name}: replicas must be at least 1, "
                             f"got {self.replicas}")
        elastic = self.elastic
        if elastic is not None and (elastic.group != WORKER_GROUP
                                    or elastic.max_replicas != self.replicas
                                    or not elastic.allows(elastic.min_replicas)
                                    or not elastic.allows(elastic.max_replicas)):
            raise ValueError(f"job {self.name}: an elastic trace job ranges over its group "
                             f"{WORKER_GROUP!r} from an allowed minimum up to its replicas "
                             f"({self.replicas}), got {elastic}")

    @property
    def gpus(self) -> int:
        """Whole GPUs of the gang: replicas × GPUs per task."""
        return self.replicas * self.per_task.gpu

    @property
    def resources(self) -> Resources:
        """The gang's total request."""
        return self.per_task.scale(self.replicas)

    def to_job(self) -> Job:
        """The `shoal.api.Job` the scheduler sees: one task group `worker` of `replicas`
        tasks of `per_task`, gang-scheduled (`schedulerName: shoal`) with every task
        required (`min_available` None means all) — or, with `gang` False, placed task by
        task (`schedulerName: default`) — submitted at `submit_time`."""
        return self.to_driven_job(None, self.checkpoint_interval)

    def to_driven_job(self, runtime_estimate: float | None,
                      checkpoint_interval: float | None) -> Job:
        """`to_job` with the runtime estimate and checkpoint interval a driver gives it,
        built in one go rather than replaced after (the simulator builds 82k of them)."""
        group = TaskGroup(name=WORKER_GROUP, replicas=self.replicas, resources=self.per_task,
                          node_selector=dict(self.node_selector))
        served = self.service is not None
        return Job(name=self.name, groups=(group,), queue=self.queue,
                   scheduler_name=SchedulerName.SHOAL if self.gang else SchedulerName.DEFAULT,
                   min_available=None,
                   priority_class=self.priority_class or ("production" if served else None),
                   user=self.user, submitted=self.submit_time, elastic=self.elastic,
                   preemptable=not served, service=self.service,
                   runtime_estimate=runtime_estimate, checkpoint_interval=checkpoint_interval,
                   freezing_window=self.freezing_window, depends_on=self.depends_on,
                   held=self.held, time_limit=self.time_limit)


_set = object.__setattr__


def prechecked_job(name: str, submit_time: float, duration: float, replicas: int,
                per_task: Resources, queue: str) -> TraceJob:
    """A `TraceJob` built without running its checks, for loaders that have already made
    them on every value (the large CSV traces: it halves the cost of building 82k jobs).
    The optional fields take their defaults."""
    job: TraceJob = object.__new__(TraceJob)
    _set(job, "name", name)
    _set(job, "submit_time", submit_time)
    _set(job, "duration", duration)
    _set(job, "replicas", replicas)
    _set(job, "per_task", per_task)
    _set(job, "queue", queue)
    _set(job, "user", None)
    _set(job, "priority_class", None)
    _set(job, "model", None)
    _set(job, "node_selector", {})
    _set(job, "elastic", None)
    _set(job, "gang", True)
    _set(job, "checkpoint_interval", None)
    _set(job, "service", None)
    _set(job, "freezing_window", None)
    _set(job, "depends_on", ())
    _set(job, "held", False)
    _set(job, "time_limit", None)
    return job


def _order(job: TraceJob) -> tuple[float, str]:
    return job.submit_time, job.name


@dataclass(frozen=True)
class Trace:
    """A loaded trace: its jobs sorted by `(submit_time, name)` and where it came from."""

    jobs: tuple[TraceJob, ...]
    source: str
    skipped: int = 0
    """Rows of the file that were read but not turned into jobs (see `skip_reasons`)."""
    skip_reasons: Mapping[str, int] = field(default_factory=dict, hash=False)
    """Why rows were skipped: reason → count. The counts add up to `skipped`."""

    def __post_init__(self) -> None:
        keys = [(job.submit_time, job.name) for job in self.jobs]
        if len({name for _, name in keys}) != len(keys):
            names = Counter(name for _, name in keys)
            twice = sorted(name for name, n in names.items() if n > 1)
            raise ValueError(f"{self.source}: job names must be unique; repeated: "
                             f"{', '.join(twice[:5])}")
        if not all(map(operator.le, keys, keys[1:])):
            raise ValueError(f"{self.source}: jobs must be sorted by (submit_time, name)")
        if sum(self.skip_reasons.values()) != self.skipped:
            raise ValueError(f"{self.source}: skip_reasons must add up to skipped "
                             f"({self.skipped})")

    @staticmethod
    def of(jobs: Iterable[TraceJob], source: str, *,
           skip_reasons: Mapping[str, int] | None = None) -> Trace:
        """Sort `jobs` by `(submit_time, name)` and build the trace."""
        reasons = dict(skip_reasons or {})
        return Trace(tuple(sorted(jobs, key=_order)), source, sum(reasons.values()), reasons)

    def __len__(self) -> int:
        return len(self.jobs)

    def queues(self) -> set[str]:
        """The virtual clusters the jobs name."""
        return {job.queue for job in self.jobs}

    def to_jobs(self) -> tuple[Job, ...]:
        """Every job as a `shoal.api.Job`, in trace order."""
        return tuple(job.to_job() for job in self.jobs)


def gang_shape(gpus: int, gpus_per_node: int, *, cpu_per_gpu: int = DEFAULT_CPU_PER_GPU,
               memory_per_gpu: int = DEFAULT_MEMORY_PER_GPU) -> tuple[int, Resources]:
    """(replicas, per-task request) of a job of `gpus` GPUs: the gang shape rule above."""
    if gpus < 0:
        raise ValueError(f"gpus must not be negative, got {gpus}")
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be at least 1, got {gpus_per_node}")
    if cpu_per_gpu < 0 or memory_per_gpu < 0:
        raise ValueError("cpu_per_gpu and memory_per_gpu must not be negative")
    if gpus == 0:
        return 1, CPU_ONLY_TASK
    if gpus <= gpus_per_node:
        per_task = gpus
    elif gpus % gpus_per_node == 0:
        per_task = gpus_per_node
    else:
        per_task = 1
    return gpus // per_task, Resources(cpu=cpu_per_gpu * per_task,
                                       memory=memory_per_gpu * per_task, gpu=per_task)
