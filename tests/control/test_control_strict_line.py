"""Under strict FIFO the control loop keeps the line behind the blocked head as one reason
(issue 18: `ReasonLedger.line`, `WaitingReasons`): when the head starts, the next job heads
the line and every job behind it waits behind that one — read through the REST API, one job
at a time and listed, exactly as if each reason were kept on its own. The real control plane
(local executor) behind the real app."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import job, running_plane, state_of, step_until, until_exists
from fastapi.testclient import TestClient

from shoal.api import JobState, Node
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile
from shoal.server import create_app
from shoal.store import Repository

GRACE = 0.5
JOBS = ("a", "b", "c", "d", "e")


@pytest.fixture
def plane(repo: Repository, node: Node, tmp_path: Path) -> Iterator[ControlPlane]:
    yield from running_plane(repo, node, tmp_path, Profile.load("fifo"), GRACE)


def test_the_line_behind_a_new_head_names_it_through_the_api(
        plane: ControlPlane, repo: Repository, tmp_path: Path) -> None:
    repo.create_user("alice", queues=["default"])
    headers = {"Authorization": f"Bearer {repo.issue_token('alice')}"}

    def waits(name: str) -> str:
        """Each job takes all 4 GPUs of the node and runs until its file exists."""
        return until_exists(tmp_path / name)

    with TestClient(create_app(repo, plane)) as http:
        def reasons() -> dict[str, tuple[str, str] | None]:
            """Every job's reason, one by one and as listed, which must agree."""
            listed = http.get("/api/v1/jobs", headers=headers).json()["items"]
            seen: dict[str, tuple[str, str] | None] = {}
            for item in listed:
                name = item["metadata"]["name"]
                one = http.get(f"/api/v1/jobs/{name}", headers=headers).json()
                reason = one["status"].get("pendingReason")
                assert item["status"].get("pendingReason") == reason, name
                seen[name] = None if reason is None else (reason["kind"], reason["message"])
            return seen

        def blocked_behind(head: str) -> tuple[str, str]:
            return ("Blocked", f"waiting behind job {head!r}, first in the strictly ordered "
                               "cluster queue")

        for name in JOBS:
            plane.submit(replace(job(name, waits(name), gpu=4), user="alice"))
        step_until(plane, lambda: state_of(plane, "a") is JobState.RUNNING)
        step_until(plane, lambda: reasons()["e"] == blocked_behind("b"))
        assert {n: r for n, r in reasons().items() if n in "cde"} == \
            dict.fromkeys("cde", blocked_behind("b"))

        for running, head in (("a", "c"), ("b", "d")):
            (tmp_path / running).touch()  # the head starts: the next one heads the line
            want = blocked_behind(head)
            step_until(plane, lambda want=want: reasons()["e"] == want)  # type: ignore[misc]
            seen = reasons()
            assert seen[running] is None and seen[head] is not None
            assert seen[head][0] != "Blocked"  # its own reason: it is the head
            assert seen["e"] == blocked_behind(head)
            # The loop's table keeps the line as one reason, not one per job.
            line = plane._waiting.ledger.line
            assert line is not None and "e" in line.members
            assert line.reason.message == blocked_behind(head)[1]
        for name in JOBS:
            (tmp_path / name).touch()
        step_until(plane, lambda: all(state_of(plane, n).terminal for n in JOBS))
        assert all(reason is None for reason in reasons().values())
