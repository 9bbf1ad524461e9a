"""`ShoalClient` and a document that becomes several jobs (`JobView.jobs`), and
`ShoalClient.original`, against the real API app (FastAPI's TestClient) with a toy importer
registered in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from shoal_documents import job_yaml
from store_scheduler import StoreScheduler
from toy_importer import toy_importer, toy_yaml

from shoal.api import Node, Resources
from shoal.client import ShoalApiError, ShoalClient
from shoal.server import create_app
from shoal.store import Repository, open_store


@pytest.fixture
def shoal(tmp_path: Path) -> Iterator[ShoalClient]:
    store = open_store(f"sqlite:///{tmp_path / 'shoal.db'}")
    store.migrate()
    repository = Repository(store)
    repository.create_user("alice", queues=["default"])
    token = repository.issue_token("alice")
    repository.put_node(Node("n", Resources.of(cpu=32000, memory=262144, gpu=8)))
    with toy_importer(), TestClient(create_app(repository, StoreScheduler(repository))) as http:
        yield ShoalClient(http=http, token=token, retry_delay=0)
    store.close()


def test_several_jobs_and_their_original(shoal: ShoalClient) -> None:
    first = shoal.submit(toy_yaml("sweep", 2))
    assert (first.name, first.jobs, first.imported) == ("sweep-0", ("sweep-0", "sweep-1"),
                                                        "ray-job")
    assert first.labels == {"team": "vision"} and first.annotations == {"toy/index": "0"}
    second = shoal.get_job("sweep-1")
    assert (second.jobs, second.imported) == ((), "ray-job")
    original = shoal.original("sweep-1")
    assert (original.format, original.document["count"]) == ("ray-job", 2)


def test_a_native_job_has_no_original(shoal: ShoalClient) -> None:
    job = shoal.submit(job_yaml("plain"))
    assert (job.jobs, job.imported, job.held, job.time_limit) == (
        ("plain",), None, False, None)
    with pytest.raises(ShoalApiError) as info:
        shoal.original("plain")
    assert info.value.status == 404
