"""Submissions the event loop holds at once are stored in one transaction
(`shoal.server.submit_batch`), and answered exactly as each alone: a clash anywhere in the
batch sends each submission its own way (new, replay, conflict, name taken)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_clock import Clock
from store_scheduler import StoreScheduler

from shoal.api import JobState, Node, Resources
from shoal.server import create_app
from shoal.store import Repository, Store


def _job(name: str, cpu: str = "1") -> str:
    return json.dumps({"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": {"taskGroups": [{"name": "main", "replicas": 2,
                                                "resources": {"cpu": cpu},
                                                "command": ["/bin/true"]}]}})


class Served:
    def __init__(self, store: Store) -> None:
        self.repository = Repository(store, clock=Clock())
        self.repository.create_user("alice", queues=["default"])
        self.token = self.repository.issue_token("alice")
        self.repository.put_node(Node("n", Resources.of(cpu=8000, memory=8192)))
        self.scheduler = StoreScheduler(self.repository)
        self.app = create_app(self.repository, self.scheduler)

    def submit_together(self, *bodies: tuple[str, str | None]) -> list[httpx.Response]:
        """Every (body, key) sent at once: their requests reach the app in one turn."""
        async def send_all() -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                def one(body: str, key: str | None) -> Any:
                    headers = {"Authorization": f"Bearer {self.token}",
                               "Content-Type": "application/json"}
                    if key is not None:
                        headers["Idempotency-Key"] = key
                    return client.post("/api/v1/jobs", content=body, headers=headers)
                return list(await asyncio.gather(*(one(b, k) for b, k in bodies)))
        return asyncio.run(send_all())


@pytest.fixture
def served(store: Store) -> Iterator[Served]:
    yield Served(store)


def test_new_jobs_sent_together_are_stored_in_one_batch(served: Served) -> None:
    answers = served.submit_together(*((_job(f"j{i}"), f"k{i}") for i in range(5)))
    assert [a.status_code for a in answers] == [201] * 5
    assert [a.json()["metadata"]["name"] for a in answers] == [f"j{i}" for i in range(5)]
    assert served.scheduler.batches == [5]
    for i in range(5):
        job = served.repository.get_job(f"j{i}")
        assert job is not None and job.state is JobState.PENDING
        assert [(t.group, t.index) for t in job.tasks] == [("main", 0), ("main", 1)]
        assert [e.kind for e in served.repository.job_events(f"j{i}")] == ["Submitted"]
    # A replay of one of them afterwards is a replay, alone.
    again = served.submit_together((_job("j1"), "k1"))
    assert again[0].status_code == 200 and again[0].json()["metadata"]["name"] == "j1"


def test_a_clash_in_the_batch_answers_each_as_alone(served: Served) -> None:
    first = served.submit_together((_job("old"), "k-old"))
    assert first[0].status_code == 201
    assert served.scheduler.batches == []  # alone: the single path
    answers = served.submit_together(
        (_job("new-1"), None),
        (_job("old"), "k-old"),  # a replay of the stored job
        (_job("old", cpu="2"), "k-old"),  # the key again with another spec
        (_job("twice"), None), (_job("twice"), None),  # one name twice in the batch
        (_job("new-2"), "k-new"))
    assert served.scheduler.batches == [6]  # tried together, refused: nothing stored
    codes = [a.status_code for a in answers]
    assert codes == [201, 200, 409, 201, 409, 201]
    assert answers[2].json()["errors"][0]["path"] == "header.Idempotency-Key"
    assert answers[4].json()["errors"][0]["path"] == "metadata.name"
    for name in ("new-1", "twice", "new-2", "old"):
        assert served.repository.get_job(name) is not None
    assert len(served.repository.job_events("twice")) == 1


def test_a_batch_the_store_fails_is_stored_one_by_one(served: Served,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An error of the store for the batch (not a clash) is not every submission's: each is
    then stored alone, and answered as it would have been."""
    def broken(jobs: object) -> None:
        served.scheduler.batches.append(-1)
        raise RuntimeError("the batch failed")

    monkeypatch.setattr(served.scheduler, "submit_batch", broken)
    answers = served.submit_together(*((_job(f"b{i}"), None) for i in range(3)))
    assert served.scheduler.batches == [-1]
    assert [a.status_code for a in answers] == [201] * 3
    assert all(served.repository.get_job(f"b{i}") is not None for i in range(3))
