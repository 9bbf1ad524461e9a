"""The API's request path alone: CPU per `POST /api/v1/jobs`, in process (issue 18).

The app `create_app` builds, over a migrated SQLite store, is called as an ASGI application
straight from this process (no HTTP server, no client library): what is timed is the
server's own work per submission — routing, auth, the body's reading and validation, the
feasibility check, the store insert and the answer. The scheduler given to the app is the
control plane's store work without its loop (`_Scheduler`: its submissions and its cached
`AdmissionCheck`), so the figure is the API's share of a burst, not the loop's.

`--concurrency C` submissions are in flight at once (as a burst's clients keep the event
loop busy; C > 1 exercises `shoal.server.submit_batch`). Prints one JSON object with the
process CPU seconds beside the wall time; run it twice (this checkout and another, as
`PYTHONPATH=OTHER python bench/api_path.py`) in one window and compare the CPU figures as
a ratio:

    uv run python bench/api_path.py --jobs 2000 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from shoal.api import Job, Node, PendingReason, Resources
from shoal.scheduler.actions.enqueue import AdmissionCheck
from shoal.server import create_app
from shoal.store import Repository, open_store


class _Scheduler:
    """The parts of `ControlPlane` a submission uses, without the loop."""

    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        self._admission = AdmissionCheck(repository.list_nodes(),
                                         repository.list_virtual_clusters(),
                                         repository.list_priority_classes())

    def submit(self, job: Job, idempotency_key: str | None, *, wake: bool = True,
               generated_from: str | None = None, original: Any = None) -> tuple[Job, bool]:
        done = self.repository.submit(job, idempotency_key=idempotency_key,
                                      generated_from=generated_from, original=original)
        return done.job, done.created

    def submit_batch(self, jobs: Sequence[tuple[Job, str | None]]) -> tuple[Job, ...] | None:
        now = self.repository.clock()
        return self.repository.insert_new(
            [(job if job.submitted else replace(job, submitted=now), key) for job, key in jobs])

    def feasibility(self, job: Job) -> PendingReason | None:
        return self._admission(job, ())

    def pending_reason(self, name: str) -> PendingReason | None:
        return None

    def wake_up(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:  # what only other routes call
        def unused(*_args: object, **_kwargs: object) -> None:
            raise NotImplementedError(name)
        return unused


def _body(name: str) -> bytes:
    return json.dumps({"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": {"taskGroups": [{"name": "main", "replicas": 1,
                                                "resources": {"cpu": "1", "memory": "16Mi"},
                                                "command": ["/bin/true"]}]}}).encode()


async def _post(app: Any, token: str, body: bytes) -> int:
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
             "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/v1/jobs", "raw_path": b"/api/v1/jobs", "root_path": "",
             "query_string": b"", "server": ("127.0.0.1", 8080),
             "client": ("127.0.0.1", 40000),
             "headers": [(b"host", b"127.0.0.1:8080"),
                         (b"authorization", b"Bearer " + token.encode()),
                         (b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # a client that stays connected
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _run(app: Any, token: str, prefix: str, count: int, concurrency: int) -> list[int]:
    statuses: list[int] = []
    names = iter(range(count))

    async def client() -> None:
        for i in names:
            statuses.append(await _post(app, token, _body(f"{prefix}-{i}")))

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return statuses


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'shoal.db'}")
        store.migrate()
        repository = Repository(store, clock=time.time)
        repository.create_user("alice", queues=["default"])
        token = repository.issue_token("alice")
        repository.put_node(Node("local", Resources.of(cpu=10_000_000, memory=1 << 40)))
        app = create_app(repository, _Scheduler(repository))  # type: ignore[arg-type]
        warm = asyncio.run(_run(app, token, "warm", args.warmup, args.concurrency))
        cpu, wall = time.process_time(), time.perf_counter()
        statuses = asyncio.run(_run(app, token, "job", args.jobs, args.concurrency))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        store.close()
    bad = sorted({s for s in warm + statuses if s != 201})
    if bad:  # a refused submission costs another path: the figure would not be this one's
        raise SystemExit(f"submissions answered {bad}, not 201")
    return {"benchmark": "api_path", "jobs": args.jobs, "concurrency": args.concurrency,
            "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "cpu_ms_per_submission": round(1000 * cpu / args.jobs, 3)}


if __name__ == "__main__":
    print(json.dumps(main()))
