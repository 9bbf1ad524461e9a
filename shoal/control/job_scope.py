"""What a running job has of its own in the live system: credentials for its tasks, and the
work those tasks submitted into its virtual cluster, which ends with it.

Seed 003 lets a running job create sub-clusters of its own virtual cluster and run work in
them (a Tune sweep, a trial per sub-cluster). For that its tasks must call the API as the
job: `TaskCredentials` gives every task `SHOAL_SERVER`, a job token (`SHOAL_TOKEN`, see
`shoal.store.accounts`) and the virtual cluster it runs in (`SHOAL_VIRTUAL_CLUSTER`), which
`shoal.runtime` reads. One token per job and control-plane lifetime: its text lives only in
this process's memory and in the tasks' environments (the store keeps its digest), so a
restarted control plane issues a new one for the tasks it launches next, while tasks it
re-adopts keep theirs. Every token of a job is revoked when the job ends.

The work a job's tasks submitted into its virtual cluster (or its sub-clusters) is stopped
when the job ends or is retried, as Ray kills what runs in a virtual cluster it removes;
`work_inside` and `orphaned` say which jobs that is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from shoal.api import Job
from shoal.api.objects import job_of_virtual_cluster
from shoal.scheduler.model import SchedulerModel
from shoal.store import NotFoundError, Repository

log = logging.getLogger(__name__)


class TaskCredentials:
    """The `SHOAL_*` variables that let a task call the API as its job. `server_url`: where
    the API listens (None: no API, so no token — only the virtual cluster is set)."""

    def __init__(self, repository: Repository, server_url: str | None) -> None:
        self.repository = repository
        self.server_url = server_url
        self._tokens: dict[str, str] = {}
        self._deferred: list[str] | None = None

    def env(self, job: Job, virtual_cluster: str) -> dict[str, str]:
        env = {"SHOAL_VIRTUAL_CLUSTER": virtual_cluster}
        token = self._token(job)
        if token is not None and self.server_url is not None:
            env.update(SHOAL_SERVER=self.server_url, SHOAL_TOKEN=token)
        return env

    def prepare(self, jobs: Iterable[Job]) -> None:
        """Issue the tokens of these jobs' tasks that are not issued yet, in one
        transaction (a cycle's launches: one store write, not one per job)."""
        if self.server_url is None:
            return
        wanted = [(job.user, job.name) for job in jobs
                  if job.user is not None and job.name not in self._tokens]
        if len(wanted) > 1:
            self._tokens.update(self.repository.issue_job_tokens(wanted))

    @contextmanager
    def deferred(self, revoked: Iterable[str] = ()) -> Iterator[None]:
        """Revocations asked within the block are made together when it ends (the jobs a
        poll ended: one store write). `revoked`: jobs whose tokens the store has revoked
        already (those its exit batch ended): only forgotten here."""
        if self._deferred is not None:  # nested: the outer block makes them
            yield
            return
        self._deferred = []
        try:
            yield
        finally:
            done = set(revoked)
            jobs = [job for job in self._deferred if job not in done]
            self._deferred = None
            if jobs:
                self.repository.revoke_tokens_of(jobs)

    def _token(self, job: Job) -> str | None:
        if self.server_url is None or job.user is None:
            return None
        token = self._tokens.get(job.name)
        if token is None:
            try:
                token = self.repository.issue_token(job.user, job=job.name)
            except NotFoundError:  # submitted as a user the API does not know
                log.warning("job %s: user %r is unknown; its tasks get no token",
                            job.name, job.user)
                return None
            self._tokens[job.name] = token
        return token

    def revoke(self, job: str) -> None:
        """The job ended: none of its tokens works any more (at the end of a `deferred`
        block, if within one)."""
        self._tokens.pop(job, None)
        if self._deferred is not None:
            self._deferred.append(job)
        else:
            self.repository.revoke_job_tokens(job)


def work_inside(model: SchedulerModel, owner: str) -> list[str]:
    """The live jobs that were submitted into `owner`'s own virtual cluster or one of its
    sub-clusters (`job_of_virtual_cluster` is `owner`), in the model's order."""
    # Every job that ends asks: the model files them by owner (`OwnedWork`), so a burst's
    # ends cost what they find, not a walk over every live job each.
    return [info.name for info in model.owned.of(owner) if info.name != owner]


def orphaned(model: SchedulerModel) -> dict[str, str]:
    """Live jobs in a job-scoped virtual cluster whose job is no longer live (it ended while
    the control plane was down, or as they were submitted) → why they are stopped."""
    out: dict[str, str] = {}
    for name, info in model.jobs.items():
        # The queue it named: one that no longer exists is not the one it is charged to.
        owner = job_of_virtual_cluster(info.job.queue)
        if owner is not None and owner not in model.jobs:
            out[name] = ended_with(info.job.queue, owner)
    return out


def ended_with(virtual_cluster: str, owner: str) -> str:
    return f"its virtual cluster {virtual_cluster!r} ended with job {owner!r}"
