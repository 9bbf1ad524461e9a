"""What the client returns about jobs and tasks: small frozen dataclasses built from the
API's JSON (the cluster's and accounts' views are `cluster_views.py`'s: a `shoal jobs` or
`shoal submit` defines only these).

Field names are Python's (`pending_reason`, `queueing_policy`); the JSON keys are the
server's camelCase aliases (`shoal.server.models`). Each view keeps the JSON it was built from
in `raw`, so a tool can print exactly what the server said (`shoal get -o json`); `raw` is
left out of equality and the hash (a dict is not hashable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shoal.api.lifecycle import JobState, TaskState

Json = dict[str, Any]
Quantities = dict[str, str | int]

#: The states `ShoalClient.wait` waits for by default.
TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class TaskView:
    """One task of a job: where it runs and how it ended. `exit_code` is filled when the
    server reports one (`exitCode`)."""

    group: str
    index: int
    state: TaskState
    node: str | None
    gpus: tuple[int, ...]
    start_time: float | None = None
    exit_code: int | None = None
    elastic: bool = False
    """Elastic surplus (above its group's minReplicas): what the job gives up first."""

    @property
    def name(self) -> str:
        """`GROUP-INDEX`, the name the logs endpoint takes (`worker-0`)."""
        return f"{self.group}-{self.index}"

    @classmethod
    def from_json(cls, data: Json) -> TaskView:
        return cls(group=str(data["group"]), index=int(data["index"]),
                   state=TaskState(data["state"]), node=_opt_str(data.get("node")),
                   gpus=tuple(int(g) for g in data.get("gpus") or ()),
                   start_time=_opt_float(data.get("startTime")),
                   exit_code=_opt_int(data.get("exitCode")),
                   elastic=bool(data.get("elastic", False)))


@dataclass(frozen=True)
class PendingReasonView:
    """Why a job waits: a kind (`Gang`, `QueueLimit` …) and a message naming the cause."""

    kind: str
    message: str
    resource: str | None = None
    queue: str | None = None
    predicate: str | None = None

    @classmethod
    def from_json(cls, data: Json) -> PendingReasonView:
        return cls(kind=str(data["kind"]), message=str(data["message"]),
                   resource=_opt_str(data.get("resource")), queue=_opt_str(data.get("queue")),
                   predicate=_opt_str(data.get("predicate")))


@dataclass(frozen=True)
class TaskPage:
    """One page of `ShoalClient.tasks`; pass `next` as `after` for the following page."""

    items: tuple[TaskView, ...]
    next: str | None

    @classmethod
    def from_json(cls, data: Json) -> TaskPage:
        return cls(items=tuple(TaskView.from_json(t) for t in data["items"]),
                   next=_opt_str(data.get("next")))


@dataclass(frozen=True)
class EventView:
    """One state change of a job or task, and its cause; `id` orders a job's history."""

    time: float
    kind: str
    cause: str
    task: str | None = None
    source: str | None = None
    target: str | None = None
    id: int = 0

    @classmethod
    def from_json(cls, data: Json) -> EventView:
        return cls(time=float(data["time"]), kind=str(data["kind"]), cause=str(data["cause"]),
                   task=_opt_str(data.get("task")), source=_opt_str(data.get("source")),
                   target=_opt_str(data.get("target")), id=int(data.get("id") or 0))


@dataclass(frozen=True)
class JobDeletion:
    """The answer to `delete_job`: `deleted` — removed now; otherwise it is being stopped
    and is removed once it has."""

    name: str
    deleted: bool
    message: str

    @classmethod
    def from_json(cls, data: Json) -> JobDeletion:
        return cls(name=str(data["name"]), deleted=bool(data["deleted"]),
                   message=str(data.get("message", "")))


@dataclass(frozen=True)
class TaskGroupView:
    name: str
    replicas: int
    resources: Quantities
    command: tuple[str, ...]
    image: str | None = None
    """The container image its tasks run in; None: on the host."""

    @classmethod
    def from_json(cls, data: Json) -> TaskGroupView:
        return cls(name=str(data["name"]), replicas=int(data["replicas"]),
                   resources=dict(data.get("resources") or {}),
                   command=tuple(str(c) for c in data.get("command") or ()),
                   image=_opt_str(data.get("image")))


@dataclass(frozen=True)
class OriginalView:
    """The document a job was imported from (`ShoalClient.original`): its format
    (`volcano-job`, `kubernetes-job`, `slurm-batch`, ...) and the document as submitted —
    a mapping, or a batch script's text."""

    format: str
    document: Any

    @classmethod
    def from_json(cls, data: Json) -> OriginalView:
        return cls(format=str(data["format"]), document=data.get("document"))


@dataclass(frozen=True)
class JobView:
    """A job as the server reports it: never its tasks (`ShoalClient.tasks` pages them), but
    how many are in each state. `groups` is empty in a listing (`list_jobs` answers
    summaries); `events` is None unless the job was read on its own (`get_job`), which
    carries its latest events."""

    name: str
    user: str | None
    queue: str
    state: JobState
    created: float
    priority_class: str | None
    groups: tuple[TaskGroupView, ...]
    task_counts: dict[TaskState, int] = field(default_factory=dict)
    pending_reason: PendingReasonView | None = None
    events: tuple[EventView, ...] | None = None
    elastic_size: int | None = None
    """An elastic job's size now (its elastic group's tasks bound or running); None: rigid."""
    end_time: float | None = None
    deleting: bool = False
    """A deletion was asked: it is removed once it has stopped."""
    annotations: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    imported: str | None = None
    """The format of the document it was imported from; None: written as shoal/v1."""
    time_limit: float | None = None
    depends_on: tuple[str, ...] = ()
    """Jobs that must succeed before this one is considered (empty in a listing)."""
    held: bool = False
    """Held: not scheduled until released (False in a listing)."""
    jobs: tuple[str, ...] = field(default=(), compare=False)
    """A submission's answer: every job it created, in order (one document may become
    several); empty otherwise."""
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def terminal(self) -> bool:
        return self.state.terminal

    @property
    def task_total(self) -> int:
        return sum(self.task_counts.values())

    @classmethod
    def from_json(cls, data: Json) -> JobView:
        meta, spec, status = data["metadata"], data["spec"], data["status"]
        reason, events = status.get("pendingReason"), status.get("events")
        return cls(
            name=str(meta["name"]), user=_opt_str(meta.get("user")), queue=str(spec["queue"]),
            state=JobState(status["state"]), created=float(meta.get("creationTimestamp", 0)),
            priority_class=_opt_str(spec.get("priorityClassName")),
            groups=tuple(TaskGroupView.from_json(g) for g in spec.get("taskGroups") or ()),
            task_counts={TaskState(k): int(v)
                         for k, v in (status.get("taskCounts") or {}).items()},
            pending_reason=None if reason is None else PendingReasonView.from_json(reason),
            events=None if events is None else tuple(EventView.from_json(e) for e in events),
            elastic_size=None if status.get("elasticSize") is None
            else int(status["elasticSize"]), end_time=_opt_float(status.get("endTime")),
            deleting=bool(status.get("deleting", False)),
            annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            imported=_opt_str(meta.get("imported")),
            time_limit=_opt_float(spec.get("timeLimit")),
            depends_on=tuple(str(d) for d in spec.get("dependsOn") or ()),
            held=bool(spec.get("hold", False)),
            jobs=tuple(str(j) for j in data.get("jobs") or ()), raw=data)


@dataclass(frozen=True)
class JobPage:
    """One page of `list_jobs`; pass `next` as `after` for the following page (None: last)."""

    items: tuple[JobView, ...]
    next: str | None

    @classmethod
    def from_json(cls, data: Json) -> JobPage:
        return cls(items=tuple(JobView.from_json(j) for j in data["items"]),
                   next=_opt_str(data.get("next")))
