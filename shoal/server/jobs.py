"""The job routes: submit, list, read, cancel, delete, the tasks and the event history.

A submission is checked completely before anything is stored: the spec (422 with field
paths), the caller's right to the queue (403), and the scheduler's verdict on whether the job
could ever run on this cluster (422 with the reason). Only then is it handed to the
scheduler, which stores it; an `Idempotency-Key` retry returns the stored job with 200.

One document may become several jobs (a foreign format's phases, an array: every job of the
body must come from one document; `Limits.max_jobs_per_submission` bounds them). Each is
checked as above before any is stored, they are stored all or none with the documents they
were imported from, the answer is the first with `jobs` naming them all, and a key's replay
answers the same set. `GET /api/v1/jobs/{name}/original` returns an imported job's original.

The submission route is `async` and does its work on the event loop, unlike the other routes,
which FastAPI runs in its thread pool. Its work is short: parsing, the admission check (both
CPU, which holds the GIL wherever it runs) and one small write transaction. Handing it to a
worker thread and back cost about as much again — 0.3 ms of CPU and six context switches per
request on a 2-core machine — and submitting is the API's hottest path. What it gives up:
while a submission waits for SQLite's write lock (held by the control loop for the length
of one of its transactions) or for PostgreSQL's answer, other requests wait too.

Every answer is bounded whatever a job's size: jobs are listed and shown as summaries that
count their tasks per state (`shoal.store.job_queries`); the tasks and the history are read
a page at a time, each list with a maximum `limit` (422, `query.limit`, beyond it). A
submission's work is O(task groups): its answer lists no task, and the store writes each
group's task rows in one statement.

Deleting (`DELETE /api/v1/jobs/{name}`, the owner or an admin) removes a job that has ended
at once (200) with its tasks, events, job tokens and idempotency key, and its name can be
used again; a job that still runs is cancelled and removed by the control loop once its
processes have stopped (202, `status.deleting` true meanwhile).

A job's name may be one whose job has ended: that job is kept in history as `NAME.N`
(`shoal.store.job_names`), where these routes read it. A `metadata.generateName` document is
named here, its prefix and a random suffix (`shoal.spec.generated_names`), drawn again
while the name is taken (at most GENERATE_TRIES times).

New jobs submitted while the event loop holds several requests are stored in one
transaction (`shoal.server.submit_batch`); a refusal sends each its own way, as before.

The control loop is woken only once the answer has been sent (a background task): woken at
once, its thread competed with the answer for the GIL, which cost every submission another
half millisecond.

The submission route is a direct route (`shoal.server.direct`): its endpoint's signature
documents it, and `submit_request` resolves the user, the body and the `Idempotency-Key`
header with the same functions and errors as FastAPI's dependencies would, then answers with
the job's JSON built once from the job (`job_models.job_json`: no model validated).
"""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from starlette.background import BackgroundTask

from shoal.api import (
    IllegalTransitionError,
    Job,
    JobState,
    PendingKind,
)
from shoal.api.images import ImagePolicy, image_problem
from shoal.api.objects import renamed
from shoal.server.auth import Authenticator, check_owner, check_queue, request_authenticator
from shoal.server.body import SPEC_BODY, RawBody, load_body, raw_body
from shoal.server.direct import direct_route, header_at_most
from shoal.server.errors import ApiError, responses
from shoal.server.job_controls import check_dependencies
from shoal.server.job_models import (
    EventPage,
    JobDeletionOut,
    JobOut,
    JobPage,
    OriginalOut,
    TaskPage,
    event_out,
    job_json,
    job_out,
    job_summary_out,
    new_job_summary,
    task_out,
)
from shoal.server.job_watch import WATCH_HELP, WATCH_RESPONSE, JobFilter, JobWatch
from shoal.server.scheduler import Scheduler
from shoal.server.submit_batch import SubmitBatches
from shoal.spec import API_VERSION, SpecBundle
from shoal.spec.generated_names import random_name
from shoal.spec.imports import Original
from shoal.store import (
    AlreadyExistsError,
    IdempotencyConflict,
    JobSummary,
    NotFoundError,
    Repository,
    User,
)

MAX_PAGE = 500
"""The most jobs one page of `GET /api/v1/jobs` holds."""
MAX_TASK_PAGE = 1000
"""The most tasks (events) one page of a job's tasks (events) holds."""
JOB_EVENTS = 50
"""How many of its latest events `GET /api/v1/jobs/{name}` carries."""
GENERATE_TRIES = 8
"""How many names a submission with `generateName` draws before it gives up (409)."""
MAX_IDEMPOTENCY_KEY = 255
"""The longest `Idempotency-Key` header a submission may carry."""
INLINE_PARSE_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (the hop to a thread would cost as
much as the work); a larger one, within the body limit, may take a second of CPU to read as
YAML, and is parsed in the thread pool so that other requests are not held up meanwhile."""


def jobs_router(repository: Repository, scheduler: Scheduler,
                current_user: Authenticator, images: ImagePolicy = ImagePolicy.REFUSE,
                watches: JobWatch | None = None) -> APIRouter:
    """`images`: what the engine does with a task's container image (`shoal up
    --images`); a job with an image is refused at submission when it is REFUSE.
    `watches`: the server's watches (`GET /api/v1/jobs?watch=true`); None: 404."""
    router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"],
                       responses=responses(401))
    body_dependency = Depends(raw_body)
    request_user = request_authenticator(repository)
    batches = SubmitBatches(scheduler)

    async def wake_up() -> None:  # async: a sync task would go through the thread pool
        scheduler.wake_up()

    after_answer = BackgroundTask(wake_up)  # one for every answer: it holds no state

    def stored(name: str) -> JobSummary:
        summary = repository.job_summary(name)
        if summary is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        return summary

    def parse(body: RawBody, user: User) -> Submission:
        known = repository.known_names()  # sets, kept until the catalog changes
        bundle = load_body(body, kind="Job", known_queues=known.queues,
                           known_nodes=known.nodes,
                           known_priority_classes=known.priority_classes)
        jobs = bundle.jobs
        if len(jobs) > 1 and not _one_document(bundle):
            raise ApiError(422, f"expected one Job document, got {len(jobs)}", "kind")
        most = body.limits.max_jobs_per_submission
        if len(jobs) > most:
            raise ApiError(422, f"the document became {len(jobs)} jobs; one submission may "
                                f"hold at most {most}", "kind")
        submitted = repository.clock()
        out: list[Job] = []
        for job in jobs:
            where = _job_where(job, len(jobs))
            if job.tasks:
                raise ApiError(422, f"{where}is set by the scheduler, not by a submission",
                               "status")
            if job.user is not None and job.user != user.name and not user.admin:
                raise ApiError(403, f"{where}user {user.name!r} may not submit as "
                                    f"{job.user!r}", "metadata.user")
            problem = image_problem(job, images)
            if problem is not None:
                raise ApiError(422, f"{where}{problem.message}", problem.path)
            out.append(dataclasses.replace(job, user=job.user or user.name,
                                           submitted=submitted))
        prefix = bundle.generated.get(out[0].name) if len(out) == 1 else None
        if prefix is not None:  # the loader's names are the same on every load
            out[0] = renamed(out[0], random_name(prefix))
        return Submission(tuple(out), dict(bundle.originals), prefix)

    async def submit_job(user: Annotated[User, Depends(current_user)],
                         body: Annotated[RawBody, body_dependency],
                         idempotency_key: Annotated[str | None,
                                                    Header(max_length=MAX_IDEMPOTENCY_KEY)]
                         = None) -> Response:
        """Submit one job document: a `shoal/v1` Job, or a document of another system that
        Shoal imports (a Volcano or Kubernetes Job, ...), which may become several jobs (all
        stored or none). The answer is the first job; `jobs` names every job created."""
        if len(body.data) > INLINE_PARSE_BYTES:  # see INLINE_PARSE_BYTES
            submission = await run_in_threadpool(parse, body, user)
        else:
            submission = parse(body, user)
        jobs = submission.jobs
        for job in jobs:
            check_queue(user, job.queue)
        check_dependencies(jobs, repository)
        for job in jobs:
            reason = scheduler.feasibility(job)
            if reason is not None and reason.kind is PendingKind.UNSCHEDULABLE:
                raise ApiError(422, f"{_job_where(job, len(jobs))}the job can never run on "
                                    f"this cluster: {reason.message}",
                               reason.field or "spec", reason=reason.to_dict())
        try:
            if len(jobs) == 1 and submission.prefix is None and not submission.originals:
                # The hot path: stored with the other submissions of this turn of the loop
                one, created = await batches.submit(jobs[0], idempotency_key)
                saved: tuple[Job, ...] = (one,)
            elif len(jobs) == 1:
                one, created = submit_named(scheduler, jobs[0], submission.prefix,
                                            idempotency_key,
                                            submission.originals.get(jobs[0].name))
                saved = (one,)
            else:
                saved, created = scheduler.submit_jobs(
                    jobs, idempotency_key, originals=submission.originals, wake=False)
        except IdempotencyConflict as exc:
            raise ApiError(409, str(exc), "header.Idempotency-Key") from None
        except AlreadyExistsError as exc:
            raise ApiError(409, str(exc), "metadata.name") from None
        first = saved[0]
        # A replay answers with the job as it is now; a new job's tasks are all pending.
        original = submission.originals.get(first.name)
        summary = (new_job_summary(first, None if original is None else original.format)
                   if created else repository.job_summary(first.name))
        answer = job_json(summary or new_job_summary(first),
                          scheduler.pending_reason(first.name), [job.name for job in saved])
        return Response(answer, 201 if created else 200,
                        {"Location": f"/api/v1/jobs/{first.name}"}, "application/json",
                        # the loop is woken once the answer is out: see the module's docstring
                        after_answer if created else None)

    async def submit_request(request: Request) -> Response:
        """`submit_job` for a request, its arguments resolved as FastAPI would: the user,
        then the body, then the header (`shoal.server.direct`)."""
        user = await request_user(request)
        body = await raw_body(request)
        return await submit_job(user, body, header_at_most(request, "Idempotency-Key",
                                                           MAX_IDEMPOTENCY_KEY))

    router.add_api_route(
        "", submit_job, methods=["POST"], status_code=201, response_model=JobOut,
        openapi_extra=SPEC_BODY,
        responses={200: {"model": JobOut, "description": "An idempotent replay"},
                   **responses(403, 409, 415, 422)},
        route_class_override=direct_route(submit_request))

    @router.get("", response_model=JobPage, responses={**WATCH_RESPONSE,
                                                       **responses(404, 422, 429)})
    def list_jobs(_user: Annotated[User, Depends(current_user)],
                  state: JobState | None = None, queue: str | None = None,
                  user: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
                  after: str | None = None,
                  watch_: Annotated[bool, Query(alias="watch", description=WATCH_HELP)]
                  = False) -> JobPage | Response:
        """Jobs in submission order, filtered, as summaries (task counts per state, never
        the tasks); `after` is the `next` of the previous page. With `watch=true`, a stream
        of server-sent events instead: the jobs, then their changes
        (`shoal.server.job_watch`)."""
        if watch_:
            if after is not None:
                raise ApiError(422, "a watch starts with every job that matches; `after` "
                                    "pages a list", "query.after")
            if watches is None:
                raise ApiError(404, "this server serves no watches", "query.watch")
            return watches.response(_user.name, JobFilter(state, queue, user))
        try:
            jobs = repository.list_job_summaries(state=state, queue=queue, user=user,
                                                 limit=limit, after=after)
        except NotFoundError as exc:
            raise ApiError(422, str(exc), "query.after") from None
        return JobPage(items=[job_summary_out(j, scheduler.pending_reason(j.job.name))
                              for j in jobs],
                       next=jobs[-1].job.name if len(jobs) == limit else None)

    @router.get("/{name}", response_model=JobOut, responses=responses(404))
    def get_job(name: str, _user: Annotated[User, Depends(current_user)]) -> JobOut:
        """One job: its spec, its task counts per state, why it waits, and its latest
        JOB_EVENTS events (its tasks and whole history: the routes below)."""
        job = stored(name)
        try:
            events = repository.event_page(name, limit=JOB_EVENTS, latest=True)
        except NotFoundError:  # deleted in between
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        return job_out(job, scheduler.pending_reason(name), events)

    @router.get("/{name}/original", response_model=OriginalOut, responses=responses(404))
    def job_original(name: str, _user: Annotated[User, Depends(current_user)]
                     ) -> OriginalOut:
        """The document the job was imported from (a Volcano or Kubernetes Job, an OpenPAI
        job, a batch script's text, ...) as it was submitted; 404 for a `shoal/v1` job."""
        try:
            original = repository.job_original(name)
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        if original is None:
            raise ApiError(404, f"job {name!r} was submitted as {API_VERSION}; it has no "
                                "other original", "path.name")
        return OriginalOut(format=original.format.value, document=original.document)

    @router.get("/{name}/tasks", response_model=TaskPage, responses=responses(404, 422))
    def job_tasks(name: str, _user: Annotated[User, Depends(current_user)],
                  limit: Annotated[int, Query(ge=1, le=MAX_TASK_PAGE)] = 100,
                  after: Annotated[str | None, Query(max_length=600)] = None) -> TaskPage:
        """The job's tasks in task order (node, GPUs, state, exit code), a page at a time;
        `after` is the `next` of the previous page (a task's name, `GROUP-INDEX`)."""
        summary = stored(name)
        mark = None if after is None else _task_mark(after)
        try:
            tasks = repository.task_page(name, limit=limit, after=mark)
        except NotFoundError as exc:
            if repository.job_summary(name) is None:
                raise ApiError(404, f"no job {name!r}", "path.name") from None
            raise ApiError(422, str(exc), "query.after") from None
        items = [task_out(t, summary.job.elastic) for t in tasks]
        return TaskPage(items=items, next=items[-1].name if len(items) == limit else None)

    @router.get("/{name}/events", response_model=EventPage, responses=responses(404, 422))
    def job_events(name: str, _user: Annotated[User, Depends(current_user)],
                   limit: Annotated[int, Query(ge=1, le=MAX_TASK_PAGE)] = 500,
                   after: Annotated[int | None, Query(ge=0)] = None) -> EventPage:
        """The job's state changes and their causes, oldest first, a page at a time; `after`
        is the `next` of the previous page (an event's id)."""
        try:
            events = repository.event_page(name, limit=limit, after=after)
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        return EventPage(items=[event_out(e) for e in events],
                         next=events[-1].id if len(events) == limit else None)

    @router.post("/{name}/cancel", response_model=JobOut, responses=responses(403, 404, 409))
    def cancel_job(name: str, user: Annotated[User, Depends(current_user)]) -> JobOut:
        """Cancel a job: its owner or an admin. A job that has already ended → 409."""
        job = stored(name).job
        check_owner(user, job)
        if job.state.terminal:
            raise ApiError(409, f"job {name!r} has already ended: {job.state.value}",
                           "path.name")
        try:
            scheduler.cancel(name)
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        except IllegalTransitionError as exc:
            raise ApiError(409, f"cannot cancel job {name!r}: {exc}") from None
        return job_out(stored(name), scheduler.pending_reason(name))

    @router.delete("/{name}", response_model=JobDeletionOut,
                   responses={202: {"model": JobDeletionOut,
                                    "description": "Cancelled; removed once it has stopped"},
                              **responses(403, 404, 503)})
    def delete_job(name: str, response: Response,
                   user: Annotated[User, Depends(current_user)]) -> JobDeletionOut:
        """Delete a job: its owner or an admin. One that has ended is removed at once, with
        its tasks, events, tokens and idempotency key (200); one still running is
        cancelled and removed once its processes have stopped (202)."""
        check_owner(user, stored(name).job)
        try:
            removed = scheduler.delete(name)
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        except TimeoutError:
            raise ApiError(503, "the scheduler did not answer in time; try again") from None
        if removed:
            return JobDeletionOut(name=name, deleted=True, message=f"job {name!r} deleted")
        response.status_code = 202
        return JobDeletionOut(name=name, deleted=False,
                              message=f"job {name!r} is being stopped; it is deleted once "
                                      "its tasks have stopped")

    return router


@dataclass(frozen=True, slots=True)
class Submission:
    """The jobs one request body became, in order, and the originals of those imported."""

    jobs: tuple[Job, ...]
    originals: Mapping[str, Original]
    prefix: str | None = None
    """The one job's `metadata.generateName` prefix, if its name was generated."""


def _one_document(bundle: SpecBundle) -> bool:
    """Whether every job of the bundle came from one and the same document."""
    first = bundle.job_documents.get(bundle.jobs[0].name)
    return first is not None and all(bundle.job_documents.get(j.name) == first
                                     for j in bundle.jobs)


def _job_where(job: Job, count: int) -> str:
    """Names the job in a message about one of several jobs of a submission."""
    return f"job {job.name!r}: " if count > 1 else ""


def submit_named(scheduler: Scheduler, job: Job, prefix: str | None,
                 idempotency_key: str | None, original: Original | None = None
                 ) -> tuple[Job, bool]:
    """Submit the job; a generated name that is taken (by any job, ended or not: a generated
    name is always a new one) is drawn again, up to GENERATE_TRIES times, as Kubernetes
    does; then AlreadyExistsError. An imported job is stored with its `original`."""
    for tries in range(1, GENERATE_TRIES + 1):
        try:
            return scheduler.submit(job, idempotency_key, wake=False, generated_from=prefix,
                                    original=original)
        except AlreadyExistsError:
            if prefix is None or tries == GENERATE_TRIES:
                raise
            job = renamed(job, random_name(prefix))
    raise AssertionError("unreachable")


def _task_mark(after: str) -> tuple[str, int]:
    """`GROUP-INDEX` (or `GROUP/INDEX`) → (group, index); 422 on `query.after` otherwise."""
    group, sep, index = after.replace("/", "-").rpartition("-")
    if not sep or not group or not index.isdigit() or len(index) > 18:
        raise ApiError(422, "expected a task's name, GROUP-INDEX (the `next` of the previous "
                            "page)", "query.after")
    return group, int(index)
