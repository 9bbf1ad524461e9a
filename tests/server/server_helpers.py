"""Builders shared by the REST API tests: the test client wrapper `Api` (over the app with a
`store_scheduler.StoreScheduler`), and `job_yaml` (`shoal_documents`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from shoal_documents import job_yaml
from store_scheduler import StoreScheduler

from shoal.store import Repository

__all__ = ["Api", "StoreScheduler", "job_yaml"]


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
