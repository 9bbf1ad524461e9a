"""`ShoalMember` against a real `shoal up` (one per module, a node of 2 GPUs): submit, the
states a copy goes through, cancel checked on the member's own API, find by name, the tail
of a log, a member that is down, a refused document, and no token in any error, repr or log
line."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import httpx
import pytest
import yaml
from shoal_documents import job_yaml, node_yaml
from shoal_up_process import shoal_up

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.api.lifecycle import JobState
from shoal.client import ShoalClient
from shoal.executors.local import free_port
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
    RemoteStatus,
)
from shoal.federation.members.shoal_member import ShoalMember

T = TypeVar("T")
DEADLINE_S = 60.0
"""A safety net only: each wait ends as soon as its condition holds."""


@dataclass(frozen=True)
class Member:
    url: str
    token: str

    def adapter(self, token: str | None = None) -> ShoalMember:
        member = MemberCluster("edge", self.url, ClusterKind.SHOAL, priority=50)
        return ShoalMember(member, MemberCredentials(token=token or self.token), timeout_s=30)

    def client(self) -> ShoalClient:
        return ShoalClient(self.url, self.token)


@pytest.fixture(scope="module")
def member(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Member]:
    home = tmp_path_factory.mktemp("member")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home) as up:
        live = Member(up.url, up.token)
        yield live
        stop_all(live)


def stop_all(member: Member) -> None:
    """Cancel what a test left running and wait until it has stopped: `shoal up` leaves its
    tasks running when it stops, to adopt them when it starts again."""
    with member.client() as shoal:
        for job in shoal.iter_jobs():
            if not job.terminal:
                shoal.cancel(job.name)
        until(lambda: [j.name for j in shoal.iter_jobs() if not j.terminal or any(
                           n and state.holds_resources for state, n in j.task_counts.items())],
              lambda left: not left, "the member's jobs to stop")


def copy(name: str, *commands: str, gpu: int = 0) -> CopyRequest:
    """An OpenPAI copy of one role, as the super-2 parser makes one."""
    role = RoleRequest("main", 1, commands, gpu=gpu, cpu=max(1, gpu), memory_mib=256,
                       env=(("GREETING", "hello"),))
    document = {"protocolVersion": "2", "name": name, "type": "job", "taskRoles": {}}
    return CopyRequest(job_name=name.rsplit("-", 1)[0], alias="edge", name=name, roles=(role,),
                       document=json.dumps(document), document_kind="openpai-v2")


def until(read: Callable[[], T], done: Callable[[T], bool], what: str) -> T:
    """Poll `read` until `done` holds of what it returned."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {value!r} after {DEADLINE_S:g} s")
        time.sleep(0.1)


def state_is(state: CopyState) -> Callable[[RemoteStatus], bool]:
    return lambda status: status.state is state


def test_a_copy_waits_runs_is_cancelled_and_another_succeeds(member: Member) -> None:
    edge = member.adapter()
    sleeper = edge.submit(copy("sleeper-edge", "sleep 300", gpu=2))
    assert sleeper == "sleeper-edge"
    running = until(lambda: edge.status(sleeper), state_is(CopyState.RUNNING), "the sleeper")
    assert running.member_state == "Running" and running.started_at is not None
    # Both GPUs are the sleeper's: the second copy waits for them.
    waiter = edge.submit(copy("greeter-edge", "echo $GREETING from shoal", "exit 0", gpu=2))
    # Once a scheduling cycle has seen it, the member's reason is the detail.
    waiting = until(lambda: edge.status(waiter), lambda s: s.detail.startswith("waits: "),
                    "the greeter's reason")
    assert (waiting.state, waiting.member_state, waiting.started_at) == (
        CopyState.WAITING, "Pending", None)

    edge.cancel(sleeper)
    stopped = until(lambda: edge.status(sleeper), state_is(CopyState.STOPPED), "the sleeper")
    assert stopped.member_state == "Cancelled"
    with member.client() as shoal:  # the member's own word
        assert shoal.get_job("sleeper-edge").state is JobState.CANCELLED
    done = until(lambda: edge.status(waiter), lambda s: s.state.is_final, "the greeter")
    assert done.state is CopyState.SUCCEEDED and done.started_at is not None
    assert until(lambda: edge.logs(waiter), bool, "the greeter's log") == "hello from shoal\n"
    assert edge.logs(waiter, limit_bytes=6) == "shoal\n"
    # Cancelling what has ended, or what was never there, is no error.
    edge.cancel(sleeper)
    edge.cancel(waiter)
    edge.cancel("never-submitted")


def test_a_running_gang_says_how_much_of_it_runs(member: Member) -> None:
    edge = member.adapter()
    name = edge.submit(copy("one-edge", "sleep 300"))
    status = until(lambda: edge.status(name), lambda s: "1 running" in s.detail, "the copy")
    assert status.state is CopyState.RUNNING
    edge.cancel(name)
    until(lambda: edge.status(name), state_is(CopyState.STOPPED), "the copy")


def test_a_copy_whose_answer_was_lost_is_found_by_name_and_never_submitted_twice(
        member: Member) -> None:
    edge = member.adapter()
    request = copy("lost-edge", "exit 0")
    edge.submit(request)  # the answer is "lost": only the name is known
    assert edge.find(request.name) == "lost-edge"
    assert edge.find("nobody-edge") is None
    assert edge.submit(request) == "lost-edge"  # a retry: the same job, not a second
    with member.client() as shoal:
        assert [j.name for j in shoal.iter_jobs() if j.name == "lost-edge"] == ["lost-edge"]


def test_a_shoal_document_is_submitted_as_it_is(member: Member) -> None:
    edge = member.adapter()
    document = job_yaml("native-edge", replicas=1, gpu=0, cpu="1", memory="256Mi",
                        command="[/bin/true]")
    # A copy's document is JSON text, as the MultiClusterJob layer makes it.
    request = CopyRequest(job_name="native", alias="edge", name="native-edge", roles=(),
                          document=json.dumps(yaml.safe_load(document)), document_kind="shoal")
    misnamed = CopyRequest(job_name="native", alias="edge", name="other-edge", roles=(),
                           document=request.document, document_kind="shoal")
    with pytest.raises(MemberRefusedError, match=r"metadata\.name: the document must be named"):
        edge.submit(misnamed)
    assert edge.submit(request) == "native-edge"
    done = until(lambda: edge.status("native-edge"), lambda s: s.state.is_final, "the copy")
    assert done.state is CopyState.SUCCEEDED


def test_a_document_the_member_refuses_names_the_member(member: Member) -> None:
    edge = member.adapter()
    with pytest.raises(MemberRefusedError) as caught:
        edge.submit(copy("huge-edge", "exit 0", gpu=3))  # the node has 2 GPUs
    assert str(caught.value).startswith("cluster 'edge': POST /api/v1/jobs: refused with 422")
    assert caught.value.alias == "edge"
    with pytest.raises(MemberRefusedError, match="cluster 'edge': GET /api/v1/jobs/nobody"):
        edge.status("nobody")


def test_a_member_that_is_down_is_unavailable(member: Member) -> None:
    down = Member(f"http://127.0.0.1:{free_port()}", member.token).adapter()
    with pytest.raises(MemberUnavailableError, match=r"cluster 'edge': POST .*cannot connect"):
        down.submit(copy("nowhere-edge", "exit 0"))
    with pytest.raises(MemberUnavailableError):
        down.find("nowhere-edge")


def test_no_token_in_any_error_repr_or_log_line(member: Member,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-" + member.token[::-1]
    texts = [repr(member.adapter()), repr(member.adapter(wrong))]
    for call in (lambda: member.adapter(wrong).status("x"),
                 lambda: member.adapter(wrong).submit(copy("t-edge", "exit 0")),
                 lambda: member.adapter().status("missing"),
                 lambda: Member(f"http://127.0.0.1:{free_port()}", member.token)
                 .adapter().status("x")):
        with pytest.raises((MemberRefusedError, MemberUnavailableError)) as caught:
            call()
        texts += [str(caught.value), repr(caught.value)]
    assert any("refused with 401" in t for t in texts)
    member.adapter().find("t-edge")  # a call that succeeds logs too
    for text in [*texts, caplog.text]:
        assert member.token not in text and wrong not in text
    assert caplog.records, "httpx logged the requests: the check above saw them"


def test_find_asks_the_members_job_route(member: Member) -> None:
    seen: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url}")
        return httpx.Response(404, json={"detail": "no job"})

    edge = ShoalMember(MemberCluster("edge", member.url, ClusterKind.SHOAL),
                       MemberCredentials(token=member.token),
                       transport=httpx.MockTransport(record))
    assert edge.find("x") is None
    assert seen == [f"GET {member.url}/api/v1/jobs/x"]


def test_an_answer_that_is_not_a_shoal_jobs_status_is_refused(member: Member) -> None:
    def not_shoal(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"status": {"state": "Sleeping"}})

    edge = ShoalMember(MemberCluster("edge", member.url, ClusterKind.SHOAL),
                       MemberCredentials(token=member.token),
                       transport=httpx.MockTransport(not_shoal))
    with pytest.raises(MemberRefusedError, match="not a Shoal job's status"):
        edge.status("x")
