"""`OpenPaiMember` against RECORDED contracts: no OpenPAI server runs here, so each test
replays the exchanges of one file of tests/contracts/openpai/ — the requests OpenPAI's REST
server expects and the answers it gives, taken from its own code (each file's `source`) —
through an `httpx.MockTransport` that fails the test on any request the contract does not
hold, in the order it holds them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.openpai import OpenPaiMember

CONTRACTS = Path(__file__).parents[2] / "contracts" / "openpai"
TOKEN = "pai-bearer-7f3a9c"
MEMBER = MemberCluster("pai", "https://pai.example.org/rest-server", ClusterKind.OPENPAI, 40)


class Replay:
    """Answers each request with the next recorded exchange, once it matches it exactly:
    method, path, the recorded headers (`<token>` standing for the member's token) and the
    body (as YAML or JSON, compared as data)."""

    def __init__(self, name: str) -> None:
        contract = json.loads((CONTRACTS / name).read_text())
        assert contract["source"], f"{name}: a contract cites where it comes from"
        self.name = name
        self.exchanges: list[dict[str, Any]] = contract["exchanges"]
        self.served = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.served == len(self.exchanges):
            pytest.fail(f"{self.name}: unrecorded request {request.method} {request.url.path}")
        expected = self.exchanges[self.served]["request"]
        got = (request.method, request.url.path)
        if got != (expected["method"], expected["path"]):
            pytest.fail(f"{self.name}[{self.served}]: {got} is not the recorded "
                        f"{expected['method']} {expected['path']}")
        for header, value in expected.get("headers", {}).items():
            wanted = value.replace("<token>", TOKEN)
            if request.headers.get(header, "").split(";")[0].strip() != wanted:
                pytest.fail(f"{self.name}[{self.served}]: header {header} is not the recorded "
                            f"one")
        if "yaml" in expected:
            assert yaml.safe_load(request.content) == expected["yaml"], self.name
        elif "json" in expected:
            assert json.loads(request.content) == expected["json"], self.name
        else:
            assert request.content == b"", f"{self.name}: the recorded request has no body"
        response = self.exchanges[self.served]["response"]
        self.served += 1
        return httpx.Response(response["status"], json=response["body"])

    def done(self) -> None:
        assert self.served == len(self.exchanges), (
            f"{self.name}: {len(self.exchanges) - self.served} recorded request(s) not made")


def member(replay: Replay | None = None, *, token: str | None = TOKEN) -> OpenPaiMember:
    transport = httpx.MockTransport(replay or Replay("errors.json"))
    return OpenPaiMember(MEMBER, MemberCredentials(user="alice", token=token),
                         transport=transport)


def copy_request(name: str = "mc-job-a", kind: str = "openpai-v2") -> CopyRequest:
    protocol = json.loads((CONTRACTS / "submit.json").read_text())["exchanges"][0]["request"]
    document = dict(protocol["yaml"], name=name)
    return CopyRequest(job_name="mc-job", alias="a", name=name,
                       roles=(RoleRequest("main", 1, ("python train.py --epochs 1",), gpu=2),),
                       document=json.dumps(document), document_kind=kind)


def test_submit_posts_the_protocol_as_yaml_and_the_id_is_user_tilde_name() -> None:
    replay = Replay("submit.json")
    assert member(replay).submit(copy_request()) == "alice~mc-job-a"
    replay.done()


def test_a_taken_name_is_refused_with_openpais_reason() -> None:
    replay = Replay("submit_conflict.json")
    with pytest.raises(MemberRefusedError) as caught:
        member(replay).submit(copy_request())
    assert str(caught.value).startswith("cluster 'pai': POST /api/v2/jobs: refused with 409")
    assert "ConflictJobError" in str(caught.value)
    replay.done()


def test_openpais_states_map_onto_copy_states() -> None:
    replay = Replay("status_lifecycle.json")
    pai = member(replay)
    seen = [pai.status("alice~mc-job-a") for _ in range(8)]
    replay.done()
    assert [(s.state, s.member_state) for s in seen] == [
        (CopyState.WAITING, "WAITING"), (CopyState.RUNNING, "RUNNING"),
        (CopyState.SUCCEEDED, "SUCCEEDED"), (CopyState.RUNNING, "RUNNING"),
        (CopyState.RUNNING, "STOPPING"), (CopyState.STOPPED, "STOPPED"),
        (CopyState.FAILED, "FAILED"), (CopyState.WAITING, "UNKNOWN")]
    launched = datetime.fromtimestamp(1700000060, UTC)
    assert [s.started_at for s in seen] == [None, *[launched] * 6, None]
    assert seen[4].detail == "stopping"
    assert seen[6].detail == "exit code 1"


def test_cancel_stops_the_job_and_a_job_openpai_does_not_know_is_stopped_already() -> None:
    replay = Replay("stop.json")
    pai = member(replay)
    pai.cancel("alice~mc-job-a")
    pai.cancel("alice~mc-job-a")
    replay.done()


def test_find_by_name_is_the_get_of_user_tilde_name() -> None:
    replay = Replay("find.json")
    pai = member(replay)
    assert pai.find("mc-job-a") == "alice~mc-job-a"
    assert pai.find("mc-job-b") is None
    replay.done()


def test_a_server_error_is_unavailable_and_a_bad_token_refused_and_neither_quotes_it() -> None:
    replay = Replay("errors.json")
    pai = member(replay)
    with pytest.raises(MemberUnavailableError) as unavailable:
        pai.status("alice~mc-job-a")
    with pytest.raises(MemberRefusedError) as refused:
        pai.status("alice~mc-job-a")
    replay.done()
    assert "server error 500" in str(unavailable.value)
    assert "refused with 401" in str(refused.value)
    for text in (str(unavailable.value), str(refused.value), repr(pai)):
        assert TOKEN not in text


def test_a_member_that_is_down_is_unavailable() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    pai = OpenPaiMember(MEMBER, MemberCredentials(user="alice", token=TOKEN),
                        transport=httpx.MockTransport(down))
    with pytest.raises(MemberUnavailableError, match=r"cluster 'pai': GET .*cannot connect"):
        pai.find("mc-job-a")


def test_the_replay_fails_a_request_that_the_contract_does_not_hold() -> None:
    with pytest.raises(pytest.fail.Exception, match="header authorization"):
        member(Replay("submit.json"), token="another").submit(copy_request())
    with pytest.raises(AssertionError):
        member(Replay("submit.json")).submit(copy_request("mc-job-c"))
    with pytest.raises(pytest.fail.Exception, match="is not the recorded"):
        member(Replay("submit.json")).cancel("alice~mc-job-a")


def test_what_an_openpai_member_refuses_before_asking() -> None:
    pai = member(Replay("submit.json"))
    with pytest.raises(MemberRefusedError, match="runs job protocol v2 documents, not 'shoal'"):
        pai.submit(copy_request(kind="shoal"))
    renamed = CopyRequest(job_name="mc-job", alias="a", name="mc-job-x", roles=(),
                          document=copy_request().document, document_kind="openpai-v2")
    with pytest.raises(MemberRefusedError, match="name: the document must be named 'mc-job-x'"):
        pai.submit(renamed)
    with pytest.raises(ValueError, match=r"spec\.credentials\.user"):
        OpenPaiMember(MEMBER, MemberCredentials(token=TOKEN))


def test_logs_say_where_openpai_keeps_them() -> None:
    text = member().logs("alice~mc-job-a")
    assert "does not serve a job's output" in text
    assert "https://pai.example.org/job-detail.html?username=alice&jobName=mc-job-a" in text
    assert len(member().logs("alice~mc-job-a", limit_bytes=10).encode()) <= 10
