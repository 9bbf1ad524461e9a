"""The job routes: submit, list, read, cancel and the event history.

A submission is checked completely before anything is stored: the spec (422 with field
paths), the caller's right to the queue (403), and the scheduler's verdict on whether the job
could ever run on this cluster (422 with the reason). Only then is it handed to the
scheduler, which stores it; an `Idempotency-Key` retry returns the stored job with 200.

The submission route is `async` and does its work on the event loop, unlike the other routes,
which FastAPI runs in its thread pool. Its work is short: parsing, the admission check (both
CPU, which holds the GIL wherever it runs) and one small write transaction. Handing it to a
worker thread and back cost about as much again — 0.3 ms of CPU and six context switches per
request on a 2-core machine — and submitting is the API's hottest path. What it gives up:
while a submission waits for SQLite's write lock (held by the control loop for the length
of one of its transactions) or for PostgreSQL's answer, other requests wait too.

The control loop is woken only once the answer has been sent (a background task): woken at
once, its thread competed with the answer for the GIL, which cost every submission another
half millisecond.
"""

import dataclasses
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Header, Query, Response

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    IllegalTransitionError,
    Job,
    JobState,
    PendingKind,
)
from shoal.server.auth import Authenticator, check_owner, check_queue
from shoal.server.body import SPEC_BODY, RawBody, load_body, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.models import EventOut, JobOut, JobPage, event_out, job_out
from shoal.server.scheduler import Scheduler
from shoal.store import (
    AlreadyExistsError,
    IdempotencyConflict,
    NotFoundError,
    Repository,
    User,
)

MAX_PAGE = 500


def jobs_router(repository: Repository, scheduler: Scheduler,
                current_user: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"],
                       responses=responses(401))
    body_dependency = Depends(raw_body)

    async def wake_up() -> None:  # async: a sync task would go through the thread pool
        scheduler.wake_up()

    def stored(name: str) -> Job:
        job = repository.get_job(name)
        if job is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        return job

    def parse(body: RawBody, user: User) -> Job:
        bundle = load_body(
            body, kind="Job",
            known_queues=[vc.name for vc in repository.list_virtual_clusters()],
            known_nodes=[n.name for n in repository.list_nodes()],
            known_priority_classes=[pc.name for pc in (*BUILTIN_PRIORITY_CLASSES,
                                                       *repository.list_priority_classes())])
        if len(bundle.jobs) != 1:
            raise ApiError(422, f"expected one Job document, got {len(bundle.jobs)}", "kind")
        job = bundle.jobs[0]
        if job.tasks:
            raise ApiError(422, "is set by the scheduler, not by a submission", "status")
        if job.user is not None and job.user != user.name and not user.admin:
            raise ApiError(403, f"user {user.name!r} may not submit as {job.user!r}",
                           "metadata.user")
        return dataclasses.replace(job, user=job.user or user.name,
                                   submitted=repository.clock())

    @router.post("", status_code=201, response_model=JobOut, openapi_extra=SPEC_BODY,
                 responses={200: {"model": JobOut, "description": "An idempotent replay"},
                            **responses(403, 409, 415, 422)})
    async def submit_job(response: Response, after: BackgroundTasks,
                         user: Annotated[User, Depends(current_user)],
                         body: Annotated[RawBody, body_dependency],
                         idempotency_key: Annotated[str | None, Header(max_length=255)] = None
                         ) -> JobOut:
        """Submit one `shoal/v1` Job document."""
        job = parse(body, user)
        check_queue(user, job.queue)
        reason = scheduler.feasibility(job)
        if reason is not None and reason.kind is PendingKind.UNSCHEDULABLE:
            raise ApiError(422, f"the job can never run on this cluster: {reason.message}",
                           "spec", reason=reason.to_dict())
        try:
            saved, created = scheduler.submit(job, idempotency_key, wake=False)
        except IdempotencyConflict as exc:
            raise ApiError(409, str(exc), "header.Idempotency-Key") from None
        except AlreadyExistsError as exc:
            raise ApiError(409, str(exc), "metadata.name") from None
        if created:
            after.add_task(wake_up)  # once the answer is out: see the module's docstring
        response.status_code = 201 if created else 200
        response.headers["Location"] = f"/api/v1/jobs/{saved.name}"
        return job_out(saved, scheduler.pending_reason(saved.name))

    @router.get("", response_model=JobPage, responses=responses(422))
    def list_jobs(_user: Annotated[User, Depends(current_user)],
                  state: JobState | None = None, queue: str | None = None,
                  user: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
                  after: str | None = None) -> JobPage:
        """Jobs in submission order, filtered; `after` is the `next` of the previous page."""
        try:
            jobs = repository.list_jobs(state=state, queue=queue, user=user, limit=limit,
                                        after=after)
        except NotFoundError as exc:
            raise ApiError(422, str(exc), "query.after") from None
        return JobPage(items=[job_out(j, scheduler.pending_reason(j.name)) for j in jobs],
                       next=jobs[-1].name if len(jobs) == limit else None)

    @router.get("/{name}", response_model=JobOut, responses=responses(404))
    def get_job(name: str, _user: Annotated[User, Depends(current_user)]) -> JobOut:
        """One job with its tasks (node, GPUs, state), why it waits, and its history."""
        job = stored(name)
        return job_out(job, scheduler.pending_reason(name), repository.job_events(name))

    @router.get("/{name}/events", response_model=list[EventOut], responses=responses(404))
    def job_events(name: str, _user: Annotated[User, Depends(current_user)]
                   ) -> list[EventOut]:
        """The job's state changes and their causes, oldest first."""
        try:
            return [event_out(e) for e in repository.job_events(name)]
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None

    @router.post("/{name}/cancel", response_model=JobOut, responses=responses(403, 404, 409))
    def cancel_job(name: str, user: Annotated[User, Depends(current_user)]) -> JobOut:
        """Cancel a job: its owner or an admin. A job that has already ended → 409."""
        job = stored(name)
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

    return router
