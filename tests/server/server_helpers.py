"""Builders shared by the REST API tests: the test client wrapper `Api` (over the app with a
`store_scheduler.StoreScheduler`), and `job_yaml`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from store_scheduler import StoreScheduler

from shoal.store import Repository


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
