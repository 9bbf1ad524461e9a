"""Services (seed 002) in the store: a job's service settings and a node's reserved load
round trip, and are part of what an idempotent retry compares."""

from __future__ import annotations

from dataclasses import replace

import pytest
from store_helpers import make_job

from shoal.api import Node, Resources
from shoal.api.services import QuietWindow, Service
from shoal.store import IdempotencyConflict, Repository

NIGHT = Service("worker", (QuietWindow(79_200.0, 25_200.0, 1), QuietWindow(43_200, 46_800, 2)),
                hand_back=600.0)


def test_a_services_settings_round_trip(repo: Repository) -> None:
    job = replace(make_job("web"), service=NIGHT, preemptable=False,
                  priority_class="production")
    stored, _ = repo.submit_job(job, idempotency_key="k")
    got = repo.get_job("web")
    assert got is not None and got == replace(stored, tasks=got.tasks)
    assert got.service == NIGHT
    unscheduled = replace(make_job("api"), service=Service())
    repo.submit_job(unscheduled, idempotency_key=None)
    again = repo.get_job("api")
    assert again is not None and again.service == Service()
    plain = repo.submit_job(make_job("train"), idempotency_key=None)[0]
    assert plain.service is None
    got_plain = repo.get_job("train")
    assert got_plain is not None and got_plain.service is None
    assert repo.submit_job(job, idempotency_key="k")[1] is False
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(replace(job, service=replace(NIGHT, hand_back=60.0)),
                        idempotency_key="k")


def test_a_nodes_reserved_load_round_trips(repo: Repository) -> None:
    node = Node("gpu-9", Resources(cpu=32_000, memory=2**30, gpu=8),
                reserved=Resources(cpu=4_000, gpu=2))
    repo.put_node(node)
    repo.put_node(Node("gpu-10", Resources(gpu=8)))
    stored = {n.name: n for n in repo.list_nodes()}
    assert stored["gpu-9"] == node
    assert stored["gpu-9"].allocatable_resources == Resources(cpu=28_000, memory=2**30, gpu=6)
    assert stored["gpu-10"].reserved.is_zero()
    repo.put_node(replace(node, reserved=Resources()))
    assert {n.name: n for n in repo.list_nodes()}["gpu-9"].reserved.is_zero()
