"""The JSON the API returns for jobs (a job, its tasks, events, pages of them, its original
document), as pydantic models, and the conversions from `shoal.api` and store objects. Field
names follow the `shoal/v1` Job document (`metadata.name`, `spec.taskGroups[]`,
`status.tasks[]`), so what `GET` returns reads like what was submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from pydantic import Field
from pydantic_core import to_json

from shoal.api import (
    Job,
    PendingReason,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.api.elastic import Elasticity, ScaleStep
from shoal.api.objects import COMPLETE_JOB_POLICY
from shoal.api.services import Service, time_of_day
from shoal.server.shared_models import (
    FixedSizeNodesOut,
    OutModel,
    Quantities,
    fixed_size_nodes_out,
    plain,
    quantities,
)
from shoal.spec import API_VERSION
from shoal.spec.elastic import PROTECT
from shoal.store import Event, JobSummary

# ---- jobs ---------------------------------------------------------------------------------

class CompletionOut(OutModel):
    min_succeeded: int | None = Field(default=None, alias="minSucceeded")
    min_failed: int | None = Field(default=None, alias="minFailed")


class FailurePolicyOut(OutModel):
    event: str
    action: str


class TaskGroupOut(OutModel):
    name: str
    replicas: int
    resources: Quantities
    command: list[str]
    env: dict[str, str]
    node_selector: dict[str, str] = Field(alias="nodeSelector")
    working_dir: str | None = Field(alias="workingDir")
    task_retry_count: int = Field(alias="taskRetryCount")
    completion: CompletionOut | None = None
    policies: list[FailurePolicyOut] = Field(default_factory=list)
    min_available: int | None = Field(default=None, alias="minAvailable")
    min_count: int | None = Field(default=None, alias="minCount")
    image: str | None = Field(default=None, description="The container image its tasks run "
                                                        "in; null: on the host.")


class JobMetadataOut(OutModel):
    name: str
    user: str | None
    creation_timestamp: float = Field(alias="creationTimestamp")
    annotations: dict[str, str] = Field(
        default_factory=dict, description="As submitted, and a rigid job's protection "
                                          "(volcano.sh/cooldown-time) as Shoal reads it; an "
                                          "elastic job's is spec.elastic.protectFor.")
    labels: dict[str, str] = Field(default_factory=dict, description="As submitted.")
    imported: str | None = Field(
        default=None, description="The format of the document the job was imported from "
                                  "(volcano-job, kubernetes-job, ...; `GET "
                                  "/api/v1/jobs/{name}/original` returns it); null: "
                                  "written as shoal/v1.")


class JobVirtualClusterOut(OutModel):
    """A job's own virtual cluster, `job:<job>`, inside its queue."""

    name: str
    flexible_resource_min: Quantities = Field(alias="flexibleResourceMin")
    flexible_resource_max: dict[str, int] = Field(alias="flexibleResourceMax")
    fixed_size_nodes: list[FixedSizeNodesOut] = Field(alias="fixedSizeNodes")
    flexible_idle_timeout: float = Field(alias="flexibleIdleTimeout")


class ElasticOut(OutModel):
    """Seed 001's elastic job: its elastic task group ranges over [minReplicas,
    maxReplicas], in the sizes `step` allows, scaled at most every `scaleCooldown` s."""

    task_group: str = Field(alias="taskGroup")
    min_replicas: int = Field(alias="minReplicas")
    max_replicas: int = Field(alias="maxReplicas")
    step: int | str | dict[str, int] = Field(
        description="1 (any size), \"powerOfTwo\", or {\"factor\": k}: as submitted.")
    scale_cooldown: float = Field(alias="scaleCooldown")
    protect_for: float = Field(alias="protectFor")


class QuietWindowOut(OutModel):
    from_: str = Field(alias="from", description="HH:MM or HH:MM:SS, UTC.")
    to: str
    replicas: int


class ServiceOut(OutModel):
    """An online service's settings (seed 002): never preempted, reclaimed nor shrunk."""

    task_group: str | None = Field(alias="taskGroup")
    schedule: list[QuietWindowOut]
    hand_back: float = Field(alias="handBack", description="Seconds.")


class JobSpecOut(OutModel):
    scheduler_name: str = Field(alias="schedulerName")
    min_available: int | None = Field(alias="minAvailable")
    queue: str
    min_resources: Quantities | None = Field(alias="minResources")
    priority_class_name: str | None = Field(alias="priorityClassName")
    completion: CompletionOut | None = None
    job_retry_count: int = Field(alias="jobRetryCount")
    task_groups: list[TaskGroupOut] = Field(alias="taskGroups")
    virtual_cluster: JobVirtualClusterOut | None = Field(default=None, alias="virtualCluster")
    elastic: ElasticOut | None = None
    preemptable: bool = True
    freezing_window: float | None = Field(
        default=None, alias="freezingWindow",
        description="Seconds after a change of size during which the fairshare action "
                    "leaves the job alone; null: the profile's default.")
    checkpoint_interval: float | None = Field(default=None, alias="checkpointInterval")
    service: ServiceOut | None = None
    time_limit: float | None = Field(default=None, alias="timeLimit",
                                     description="Seconds a run may last; null: no limit.")
    depends_on: list[str] = Field(
        default_factory=list, alias="dependsOn",
        description="Jobs that must succeed before this one is considered (afterok).")
    hold: bool = Field(default=False, description="Held now (`shoal hold` / `shoal release`).")


class TaskOut(OutModel):
    name: str = Field(description="`GROUP-INDEX`: what the logs route's `task` takes.")
    group: str
    index: int
    state: str
    node: str | None
    gpus: list[int]
    start_time: float | None = Field(alias="startTime")
    exit_code: int | None = Field(
        alias="exitCode", description="How its latest process ended: the exit code, or minus "
                                      "the signal that killed it; null while it has not ended.")
    retries: int = Field(description="Restarts in place since the job (re)started "
                                     "(`taskRetryCount`).")
    elastic: bool = Field(
        default=False, description="Elastic surplus: above its elastic group's minReplicas, "
                                   "the first a job gives up when others need room; false: "
                                   "guaranteed while the job runs.")


class PendingReasonOut(OutModel):
    kind: str
    message: str
    resource: str | None = None
    queue: str | None = None
    predicate: str | None = None
    field: str | None = Field(default=None, description="The job's field at fault (a path), "
                              "when the reason is a rule the spec breaks.")


class EventOut(OutModel):
    id: int = Field(description="Orders the history; pass as `after` for the next page.")
    time: float
    kind: str
    cause: str
    task: str | None
    source: str | None
    target: str | None


class JobStatusOut(OutModel):
    state: str
    retries: int = Field(description="Restarts of the whole job so far (`jobRetryCount`).")
    task_counts: dict[str, int] = Field(
        alias="taskCounts",
        description="How many of its tasks are in each state (states with none left out). "
                    "The tasks themselves: `GET /api/v1/jobs/{name}/tasks`, a page at a time.")
    update_time: float = Field(alias="updateTime",
                               description="When the job or one of its tasks last changed.")
    end_time: float | None = Field(
        default=None, alias="endTime",
        description="When it ended; `shoal up --job-ttl` removes it that long after.")
    deleting: bool = Field(
        default=False, description="A DELETE was asked: it is removed once it has stopped.")
    elastic_size: int | None = Field(
        default=None, alias="elasticSize",
        description="An elastic job's size now: the tasks of its elastic group that are bound "
                    "or running; null for a rigid job.")
    pending_reason: PendingReasonOut | None = Field(alias="pendingReason")
    events: list[EventOut] | None = Field(
        default=None, description="The latest entries of the job's history (at most "
                                  "JOB_EVENTS), oldest first; only on `GET "
                                  "/api/v1/jobs/{name}`. The whole history: its events "
                                  "route, a page at a time.")


class JobOut(OutModel):
    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "Job"
    metadata: JobMetadataOut
    spec: JobSpecOut
    status: JobStatusOut
    jobs: list[str] | None = Field(
        default=None, description="Only in a submission's answer: every job it created (or "
                                  "an idempotent replay found), in order; the answer shows "
                                  "the first. One document may become several jobs.")


class OriginalOut(OutModel):
    """The document a job was imported from."""

    format: str = Field(description="volcano-job, volcano-pod-group, kubernetes-job, "
                                    "openpai-v2, slurm-batch, ray-job or sedna.")
    document: Any = Field(description="The document as submitted (parsed), or a batch "
                                      "script's text.")


class JobSummarySpecOut(OutModel):
    queue: str
    scheduler_name: str = Field(alias="schedulerName")
    priority_class_name: str | None = Field(alias="priorityClassName")


class JobSummaryOut(OutModel):
    """A job as `GET /api/v1/jobs` lists it: its spec's queue and priority, its status with
    task counts, never its tasks nor its task groups."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "Job"
    metadata: JobMetadataOut
    spec: JobSummarySpecOut
    status: JobStatusOut


class JobPage(OutModel):
    items: list[JobSummaryOut]
    next: str | None = Field(description="Pass as `after` for the next page; null on the last.")


class TaskPage(OutModel):
    items: list[TaskOut]
    next: str | None = Field(description="Pass as `after` for the next page; null on the last.")


class EventPage(OutModel):
    items: list[EventOut]
    next: int | None = Field(description="Pass as `after` for the next page; null on the last.")


class JobDeletionOut(OutModel):
    name: str
    deleted: bool = Field(description="true: removed now (200); false: it is being stopped "
                                      "and is removed once it has (202).")
    message: str


#: How an answer's parts are made: `_validated` (the models, for the routes that answer with
#: one) or `shared_models.plain` (their JSON data, nothing validated: a submission's answer
#: and a watch's line, from values the server has just read and checked; five validated
#: models per answer were ~11 % of the submission route, issue 18 — for the model routes,
#: plain data validated once cost more than the models built directly). One builder per
#: part serves both, so the two cannot drift; `tests/server/test_api30_plain_answers.py`
#: compares their JSON byte for byte over every job of `examples/`.
Make = Callable[..., Any]


def _validated(model: type[OutModel], /, **values: Any) -> Any:
    return model(**values)


def _reason(make: Make, reason: PendingReason | None) -> Any:
    return None if reason is None else make(PendingReasonOut, **reason.to_dict())


def reason_out(reason: PendingReason | None) -> PendingReasonOut | None:
    return cast("PendingReasonOut | None", _reason(_validated, reason))


def _event(make: Make, event: Event) -> Any:
    return make(EventOut, id=event.id, time=event.time, kind=event.kind, cause=event.cause,
                task=None if event.task is None else str(event.task),
                source=event.source, target=event.target)


def event_out(event: Event) -> EventOut:
    return cast(EventOut, _event(_validated, event))


def task_out(task: Task, elastic: Elasticity | None) -> TaskOut:
    return TaskOut(name=f"{task.group}-{task.index}", group=task.group, index=task.index,
                   state=task.state.value, node=task.node,
                   gpus=list(task.gpus), start_time=task.started,
                   exit_code=task.exit_code, retries=task.retries,
                   elastic=elastic is not None and elastic.is_surplus(task.group, task.index))


def _elastic(make: Make, job: Job) -> Any:
    elastic = job.elastic
    if elastic is None:
        return None
    step: int | str | dict[str, int] = 1
    if elastic.step is ScaleStep.POWER_OF_TWO:
        step = "powerOfTwo"
    elif elastic.step is ScaleStep.FACTOR:
        step = {"factor": elastic.factor}
    return make(ElasticOut, task_group=elastic.group, min_replicas=elastic.min_replicas,
                max_replicas=elastic.max_replicas, step=step,
                scale_cooldown=elastic.scale_cooldown, protect_for=job.protect_for)


def _completion(make: Make, min_succeeded: int | None, min_failed: int | None) -> Any:
    if min_succeeded is None and min_failed is None:
        return None
    return make(CompletionOut, min_succeeded=min_succeeded, min_failed=min_failed)


def _metadata(make: Make, job: Job, imported: str | None) -> Any:
    annotations = dict(job.annotations)
    if job.protect_for and job.elastic is None:
        annotations.setdefault(PROTECT, f"{job.protect_for:g}s")
    return make(JobMetadataOut, name=job.name, user=job.user,
                creation_timestamp=job.submitted, annotations=annotations,
                labels=dict(job.labels), imported=imported)


def _status(make: Make, summary: JobSummary, reason: PendingReason | None,
            events: list[Event] | None = None) -> Any:
    job = summary.job
    return make(JobStatusOut, state=job.state.value, retries=job.retries,
                task_counts={s.value: n for s, n in summary.task_counts.items()},
                update_time=summary.updated, end_time=summary.ended,
                deleting=summary.delete_requested,
                elastic_size=summary.elastic_size, pending_reason=_reason(make, reason),
                events=None if events is None else [_event(make, e) for e in events])


def new_job_summary(job: Job, imported: str | None = None) -> JobSummary:
    """The summary of a job just stored: every task PENDING."""
    return JobSummary(job=job, task_counts={TaskState.PENDING: job.replicas} if job.replicas
                      else {}, elastic_size=None if job.elastic is None else 0,
                      updated=job.submitted, ended=None, delete_requested=False,
                      imported=imported)


def _policies(make: Make, group: TaskGroup) -> list[Any]:
    """A group's policies as its spec writes them, `TaskCompleted: CompleteJob` last."""
    out = [make(FailurePolicyOut, event=e.value, action=a.value)
           for e, a in group.policies.items()]
    if group.completes_job:
        event, action = COMPLETE_JOB_POLICY
        out.append(make(FailurePolicyOut, event=event, action=action))
    return out


def _job(make: Make, summary: JobSummary, reason: PendingReason | None,
         events: list[Event] | None) -> Any:
    job = summary.job
    groups = [make(TaskGroupOut, name=g.name, replicas=g.replicas,
                   resources=quantities(g.resources), command=list(g.command),
                   env=dict(g.env), node_selector=dict(g.node_selector),
                   working_dir=g.working_dir, task_retry_count=g.task_retry_count,
                   completion=_completion(make, g.min_succeeded, None),
                   policies=_policies(make, g),
                   min_available=g.min_available, min_count=g.min_count, image=g.image)
              for g in job.groups]
    return make(
        JobOut,
        metadata=_metadata(make, job, summary.imported),
        spec=make(JobSpecOut, scheduler_name=job.scheduler_name.value,
                  min_available=job.min_available, queue=job.queue,
                  min_resources=(None if job.min_resources is None
                                 else quantities(job.min_resources)),
                  priority_class_name=job.priority_class,
                  completion=_completion(make, job.min_succeeded, job.min_failed),
                  job_retry_count=job.job_retry_count, task_groups=groups,
                  virtual_cluster=_job_vc(make, job.virtual_cluster),
                  elastic=_elastic(make, job), preemptable=job.preemptable,
                  freezing_window=job.freezing_window,
                  checkpoint_interval=job.checkpoint_interval,
                  service=_service(make, job.service), time_limit=job.time_limit,
                  depends_on=list(job.depends_on), hold=job.held),
        status=_status(make, summary, reason, events))


def job_out(summary: JobSummary, reason: PendingReason | None = None,
            events: list[Event] | None = None) -> JobOut:
    """A job in full (its spec, its status with task counts), never its tasks."""
    return cast(JobOut, _job(_validated, summary, reason, events))


def job_document(summary: JobSummary, reason: PendingReason | None = None,
                 events: list[Event] | None = None) -> dict[str, Any]:
    """`job_out`'s answer as `plain` data (`JobOut`'s JSON keys, its JSON's values)."""
    return cast("dict[str, Any]", _job(plain, summary, reason, events))


def job_json(summary: JobSummary, reason: PendingReason | None,
             jobs: list[str] | None) -> bytes:
    """`job_out` with `jobs` set, as the JSON its `by_alias` serialisation writes, built
    without a model: a submission's answer (the job is one the server has just read and
    checked, its fields of their types)."""
    document = job_document(summary, reason)
    document["jobs"] = jobs
    return to_json(document)


def _service(make: Make, service: Service | None) -> Any:
    if service is None:
        return None
    return make(ServiceOut, task_group=service.group, hand_back=service.hand_back, schedule=[
        make(QuietWindowOut, from_=time_of_day(w.start), to=time_of_day(w.end),
             replicas=w.replicas)
        for w in service.schedule])


def _job_summary(make: Make, summary: JobSummary, reason: PendingReason | None) -> Any:
    job = summary.job
    return make(JobSummaryOut,
                metadata=_metadata(make, job, summary.imported),
                spec=make(JobSummarySpecOut, queue=job.queue,
                          scheduler_name=job.scheduler_name.value,
                          priority_class_name=job.priority_class),
                status=_status(make, summary, reason))


def job_summary_out(summary: JobSummary, reason: PendingReason | None) -> JobSummaryOut:
    return cast(JobSummaryOut, _job_summary(_validated, summary, reason))


def job_summary_json(summary: JobSummary, reason: PendingReason | None) -> bytes:
    """`job_summary_out`'s `by_alias` JSON, built without a model (a watch's change)."""
    return to_json(_job_summary(plain, summary, reason))


def _job_vc(make: Make, vc: VirtualCluster | None) -> Any:
    if vc is None:
        return None
    fixed: list[Any] = list(fixed_size_nodes_out(vc))
    if make is not _validated:
        fixed = [group.model_dump(by_alias=True) for group in fixed]
    return make(JobVirtualClusterOut, name=vc.name, flexible_resource_min=quantities(vc.min),
                flexible_resource_max=vc.max.to_dict(), fixed_size_nodes=fixed,
                flexible_idle_timeout=vc.idle_timeout)
