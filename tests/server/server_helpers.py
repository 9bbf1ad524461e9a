"""Builders shared by the REST API tests: the store-backed `Scheduler` stand-in, the test
client wrapper `Api`, and `job_yaml`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from shoal.api import Job, JobState, PendingReason
from shoal.scheduler.actions.enqueue import admission_check
from shoal.store import Repository


class StoreScheduler:
    """The control plane's submit/cancel/reasons, straight onto the repository."""

    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        self.reasons: dict[str, PendingReason] = {}

    def submit(self, job: Job, idempotency_key: str | None) -> tuple[Job, bool]:
        return self.repository.submit_job(job, idempotency_key=idempotency_key)

    def cancel(self, name: str) -> None:
        self.repository.transition_job(name, JobState.CANCELLED, "cancelled by the API")

    def pending_reason(self, name: str) -> PendingReason | None:
        return self.reasons.get(name)

    def feasibility(self, job: Job) -> PendingReason | None:
        return admission_check(job, self.repository.list_nodes(),
                               self.repository.list_virtual_clusters(),
                               self.repository.list_priority_classes())


@dataclass
class Api:
    """A test client and the tokens of its users: alice and bob (queue `default`, alice also
    `team-a`) and root (admin)."""

    client: TestClient
    repository: Repository
    scheduler: StoreScheduler
    tokens: dict[str, str]
    log_dir: Path | None = None
    """Where the app's log source puts task `JOB/GROUP/INDEX`: `JOB.GROUP-INDEX.out|err`."""

    def headers(self, who: str | None, **extra: str) -> dict[str, str]:
        out = dict(extra)
        if who is not None:
            out["Authorization"] = f"Bearer {self.tokens[who]}"
        return out

    def request(self, method: str, url: str, who: str | None, **kwargs: Any) -> Any:
        headers = self.headers(who, **kwargs.pop("headers", {}))
        return self.client.request(method, url, headers=headers, **kwargs)

    def submit(self, text: str, who: str = "alice", key: str | None = None,
               content_type: str = "application/yaml") -> Any:
        headers = {"Content-Type": content_type}
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.request("POST", "/api/v1/jobs", who, content=text, headers=headers)


def job_yaml(name: str = "train", *, queue: str = "default", replicas: int = 2, gpu: int = 1,
             cpu: str = "2", extra_spec: str = "", extra_group: str = "",
             user: str | None = None) -> str:
    user_line = f"\n  user: {user}" if user else ""
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata:
  name: {name}{user_line}
spec:
  schedulerName: shoal
  queue: {queue}{extra_spec}
  taskGroups:
    - name: worker
      replicas: {replicas}
      resources: {{cpu: "{cpu}", memory: 4Gi, gpu: {gpu}}}
      command: [python, train.py]{extra_group}
"""
