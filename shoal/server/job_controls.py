"""The job control routes — `POST /api/v1/jobs/{name}/hold`, `/release`, `/requeue` — and
the check of a submission's dependencies (`spec.dependsOn`).

Holding keeps a pending job from being scheduled until it is released (Slurm's `scontrol
hold`/`release`); a job that has started cannot be held (409) — `requeue?hold=true` puts it
back to pending held. Requeueing stops a started job's tasks and puts it back to pending
(Slurm's `scontrol requeue`): no retry is counted, it keeps its submission order; a job
that has not started, or has ended, cannot be requeued (409). Holding a held job or
releasing one that is not held changes nothing (200). Each is the job's owner's or an
admin's, carried out by the control loop after it is stored, with an event naming who
asked, and an entry in the audit log (`job.hold`, `job.release`, `job.requeue`); the answer
is the job as it is then.
"""

from collections.abc import Callable, Sequence
from typing import Annotated

from fastapi import APIRouter, Depends

from shoal.api import Job
from shoal.scheduler.gates import dependency_issues
from shoal.server.auth import Authenticator, check_owner
from shoal.server.errors import ApiError, ErrorItem, responses
from shoal.server.job_models import JobOut, job_out
from shoal.server.scheduler import Scheduler
from shoal.store import NotFoundError, Repository, User
from shoal.store.audit import AuditNote
from shoal.store.job_controls import ControlConflictError


def check_dependencies(jobs: Sequence[Job], repository: Repository) -> None:
    """Refuse (422, at `spec.dependsOn[i]`) dependencies on no job, on the job itself, in a
    cycle among `jobs` (one submission's), or on a job that ended otherwise than Succeeded.
    A job of the same submission counts as known."""
    wanted = {d for job in jobs for d in job.depends_on}
    if not wanted:
        return
    issues = dependency_issues(jobs, repository.job_states(wanted))
    if issues:
        several = len(jobs) > 1
        raise ApiError(422, issues[0].message, errors=[
            ErrorItem(path=issue.path, message=(f"job {jobs[issue.job].name!r}: "
                                                if several else "") + issue.message)
            for issue in issues])


def job_controls_router(repository: Repository, scheduler: Scheduler,
                        current_user: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=responses(401))

    def control(name: str, user: User, verb: str, act: Callable[[], object]) -> JobOut:
        summary = repository.job_summary(name)
        if summary is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        check_owner(user, summary.job)
        try:
            act()
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        except ControlConflictError as exc:
            raise ApiError(409, str(exc), "path.name") from None
        except TimeoutError:
            raise ApiError(503, "the scheduler did not answer in time; try again") from None
        # Its own transaction: the loop's thread stored the change itself.
        repository.record_audit(AuditNote(user.name, f"job.{verb}", name))
        after = repository.job_summary(name)
        if after is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        return job_out(after, scheduler.pending_reason(name))

    @router.post("/{name}/hold", response_model=JobOut, responses=responses(403, 404, 409, 503))
    def hold_job(name: str, user: Annotated[User, Depends(current_user)]) -> JobOut:
        """Hold a pending job: it is not scheduled until released. Its owner or an admin; a
        job that has started or ended → 409."""
        return control(name, user, "hold", lambda: scheduler.hold(name, user.name))

    @router.post("/{name}/release", response_model=JobOut,
                 responses=responses(403, 404, 409, 503))
    def release_job(name: str, user: Annotated[User, Depends(current_user)]) -> JobOut:
        """Release a held job: it is scheduled again (once its dependencies succeeded)."""
        return control(name, user, "release", lambda: scheduler.release(name, user.name))

    @router.post("/{name}/requeue", response_model=JobOut,
                 responses=responses(403, 404, 409, 503))
    def requeue_job(name: str, user: Annotated[User, Depends(current_user)],
                    hold: bool = False) -> JobOut:
        """Stop a started job's tasks and put it back to pending, every task from scratch,
        no retry counted (`hold=true`: held as well). Not started, or ended → 409."""
        return control(name, user, "requeue",
                       lambda: scheduler.requeue(name, user.name, hold=hold))

    return router
