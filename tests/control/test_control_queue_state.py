"""Closing and opening a queue on a running control plane through the REST API (issue 16):
an admin replaces the VirtualCluster with `state: Closed` (`PUT /api/v1/virtual-clusters/
{name}`); the job running in it runs on, a job submitted into it waits with a QueueClosed
reason naming it; opened again, that job starts. The real control plane (local executor)
behind the real app."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import job, running_plane, state_of, step_until, until_exists
from fastapi.testclient import TestClient

from shoal.api import JobState, Node, VirtualCluster
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile
from shoal.server import create_app
from shoal.store import Repository

GRACE = 0.5
YAML = {"Content-Type": "application/yaml"}


def team(state: str) -> str:
    return ("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team}\n"
            f"spec: {{state: {state}, priority: 5}}\n")


@pytest.fixture
def plane(repo: Repository, node: Node, tmp_path: Path) -> Iterator[ControlPlane]:
    repo.put_virtual_cluster(VirtualCluster("team"))
    repo.create_user("alice", queues=["team"])
    yield from running_plane(repo, node, tmp_path, Profile.default(), GRACE,
                             virtual_clusters=repo.list_virtual_clusters())


def test_a_closed_queue_keeps_its_running_job_and_holds_a_new_one(
        plane: ControlPlane, repo: Repository, tmp_path: Path) -> None:
    repo.create_user("root", admin=True)
    token = repo.issue_token("root")
    release = tmp_path / "release"
    wait = until_exists(release)
    with TestClient(create_app(repo, plane)) as http:
        def put(state: str) -> None:
            answer = http.put("/api/v1/virtual-clusters/team", content=team(state),
                              headers={**YAML, "Authorization": f"Bearer {token}"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["state"] == state

        plane.submit(replace(job("early", wait), queue="team", user="alice"))
        step_until(plane, lambda: state_of(plane, "early") is JobState.RUNNING)

        put("Closed")
        plane.submit(replace(job("late", "pass"), queue="team", user="alice"))
        for _ in range(5):
            plane.step()
        assert state_of(plane, "early") is JobState.RUNNING
        assert state_of(plane, "late") is JobState.PENDING
        shown = http.get("/api/v1/jobs/late",
                         headers={"Authorization": f"Bearer {token}"}).json()
        reason = shown["status"]["pendingReason"]
        assert (reason["kind"], reason["queue"]) == ("QueueClosed", "team")
        assert "'team' is Closed" in reason["message"]

        put("Open")
        step_until(plane, lambda: state_of(plane, "late") is not JobState.PENDING)
        assert state_of(plane, "early") is JobState.RUNNING
        release.touch()
        step_until(plane, lambda: state_of(plane, "early").terminal)
        assert state_of(plane, "early") is JobState.SUCCEEDED


def test_a_replacement_is_refused_for_an_unknown_name_or_another_parent(
        plane: ControlPlane, repo: Repository) -> None:
    repo.create_user("root", admin=True)
    headers = {**YAML, "Authorization": f"Bearer {repo.issue_token('root')}"}
    with TestClient(create_app(repo, plane)) as http:
        missing = http.put("/api/v1/virtual-clusters/nope", content=team("Closed"),
                           headers=headers)
        assert missing.status_code == 404
        assert missing.json()["errors"][0]["path"] == "path.name"
        renamed = http.put("/api/v1/virtual-clusters/default", content=team("Closed"),
                           headers=headers)
        assert renamed.status_code in (404, 422)
        moved = http.put("/api/v1/virtual-clusters/team", headers=headers, content=(
            "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team}\n"
            "spec: {parent: default}\n"))
        assert moved.status_code == 422
        assert moved.json()["errors"][0]["path"] == "spec.parent"
        bad = http.put("/api/v1/virtual-clusters/team", headers=headers, content=(
            "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team}\n"
            "spec: {state: Shut}\n"))
        assert bad.status_code == 422
        assert "spec.state" in bad.json()["errors"][0]["path"]
