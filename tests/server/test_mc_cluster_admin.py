"""Admins declare, change and remove member clusters through the API (issue 19) over
in-memory members: others get 403, bad documents 422 by field path, the clusters file's
members are read-only, a member in use is not removed — and a declared member is used by the
dispatcher at its next pass, its token sealed: in no response, no log line, not in the
database file."""

from __future__ import annotations

import json
import logging
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fake_clock import Clock as RepoClock
from fastapi.testclient import TestClient
from mc_fakes import Clock, Members
from server_helpers import StoreScheduler

from shoal.federation.lanes import MemberLanes
from shoal.federation.registry import load_registry
from shoal.federation.service import Federation
from shoal.server import create_app
from shoal.store import Repository, Store

FILE_TOKEN = "file-member-token-31ab"
TOKEN = "small-sealed-token-7e9f2c"
NEW_TOKEN = "small-rotated-token-0d44aa"

SMALL = textwrap.dedent(f"""\
    apiVersion: shoal/v1
    kind: Cluster
    metadata: {{name: small}}
    spec:
      uri: http://small.example
      kind: shoal
      priority: 10
      gpuType: T4
      credentials: {{user: alice, token: {TOKEN}}}
    """)

JOB = textwrap.dedent("""\
    protocolVersion: super-2
    name: mcjob
    prerequisites:
      - {name: python, type: dockerimage, uri: 'python:3.11'}
    taskRoles:
      main:
        instances: 1
        resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 1}
        dockerImage: python
        commands: [echo hi]
    extras:
      com.microsoft.pai.runtimeplugin:
        - plugin: super_scheduler
          parameters:
            clusters:
              big: {uri: 'http://big.example'}
              small: {uri: 'http://small.example'}
            guardTimeRunning: 2s
            timeScale: 1s
    """)


@dataclass
class Api:
    client: TestClient
    tokens: dict[str, str]
    members: Members
    clock: Clock
    federation: Federation
    db: Path | None
    texts: list[str] = field(default_factory=list)

    def h(self, who: str, content_type: str | None = None) -> dict[str, str]:
        extra = {} if content_type is None else {"Content-Type": content_type}
        return {"Authorization": f"Bearer {self.tokens[who]}", **extra}

    def call(self, method: str, path: str, who: str = "root", body: str | None = None,
             content_type: str = "application/yaml") -> tuple[int, object]:
        r = self.client.request(method, f"/api/v1{path}", content=body,
                                headers=self.h(who, content_type if body is not None else None))
        self.texts.append(r.text)
        return r.status_code, (r.json() if r.content else None)

    def step(self) -> None:
        self.federation.dispatcher.step(self.clock.now)
        self.clock.now += 0.5


@pytest.fixture
def api(store: Store, tmp_path: Path) -> Iterator[Api]:
    repository = Repository(store, clock=RepoClock())
    repository.create_user("alice", queues=["default"])
    repository.create_user("root", admin=True)
    tokens = {n: repository.issue_token(n) for n in ("alice", "root")}
    (tmp_path / "big.token").write_text(FILE_TOKEN)
    registry = load_registry(textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {name: big}
        spec: {uri: 'http://big.example', kind: shoal, priority: 90,
               credentials: {tokenFile: big.token}}
        """), base_dir=tmp_path)
    clock, members = Clock(), Members("big", "small")
    federation = Federation.assemble(registry, store, tmp_path, clock=clock, adapters=members,
                                     lanes=MemberLanes(clock), settle_s=5.0)
    app = create_app(repository, StoreScheduler(repository), federation=federation)
    db = Path(store.url.removeprefix("sqlite:///")) if store.url.startswith("sqlite") else None
    with TestClient(app) as client:
        yield Api(client, tokens, members, clock, federation, db)
    federation.close()


def paths(answer: object) -> list[str]:
    assert isinstance(answer, dict)
    return [e["path"] for e in answer["errors"]]


def test_only_admins_declare_change_or_remove(api: Api) -> None:
    for method, path, body in (("POST", "/clusters", SMALL),
                               ("PUT", "/clusters/small", "priority: 5"),
                               ("DELETE", "/clusters/small", None)):
        status, answer = api.call(method, path, "alice", body)
        assert status == 403, (method, answer)
        assert isinstance(answer, dict) and "not an admin" in answer["errors"][0]["message"]
        r = api.client.request(method, f"/api/v1{path}", content=body)
        assert r.status_code == 401
    status, answer = api.call("GET", "/clusters", "alice")
    assert status == 200 and [c["alias"] for c in answer] == ["big"]  # type: ignore[union-attr]


def test_a_declared_member_is_used_at_the_next_pass_its_token_sealed(
        api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # Before: a job naming `small` is refused, `small` is not a member.
    status, answer = api.call("POST", "/multi-cluster-jobs", "alice", JOB)
    assert status == 422 and "small" in json.dumps(answer)
    status, answer = api.call("POST", "/clusters", "root", SMALL)
    assert status == 201, answer
    assert answer == {"alias": "small", "uri": "http://small.example", "kind": "shoal",
                      "gpuType": "T4", "priority": 10, "declared": "api", "reachable": None,
                      "lastError": "", "retryAt": None}
    status, listed = api.call("GET", "/clusters", "alice")
    assert [(c["alias"], c["declared"]) for c in listed] == [  # type: ignore[union-attr]
        ("big", "file"), ("small", "api")]
    status, answer = api.call("POST", "/multi-cluster-jobs", "alice", JOB)
    assert status == 201, answer
    api.step()  # no restart: the dispatcher reads the registry at its pass
    assert api.members["small"].submits == ["mcjob-small"]
    assert api.members["small"].tokens == [TOKEN]  # unsealed for its adapter only
    assert api.members["big"].tokens == [FILE_TOKEN]
    api.call("GET", "/multi-cluster-jobs/mcjob", "alice")
    assert any("audit: admin 'root' added cluster 'small'" in r.getMessage()
               for r in caplog.records)
    for text in api.texts:
        assert TOKEN not in text
    assert TOKEN not in caplog.text
    if api.db is not None:
        raw = b"".join(p.read_bytes() for p in api.db.parent.glob(api.db.name + "*"))
        assert b"small.example" in raw and TOKEN.encode() not in raw


def test_bad_documents_are_refused_by_field_path(api: Api) -> None:
    def refused(text: str, content_type: str = "application/yaml") -> list[str]:
        status, answer = api.call("POST", "/clusters", "root", text, content_type)
        assert status == 422, answer
        return paths(answer)

    by_file = SMALL.replace(f"token: {TOKEN}", "tokenFile: /etc/shadow")
    assert refused(by_file) == ["spec.credentials.tokenFile"]
    assert "reads no file" in api.texts[-1] and "/etc/shadow" not in api.texts[-1]
    assert refused(SMALL.replace(f"token: {TOKEN}", "tokenEnv: HOME")) == [
        "spec.credentials.tokenEnv"]
    assert refused(SMALL.replace("metadata: {name: small}\n", "")) == ["metadata.name"]
    assert refused(SMALL.replace("priority: 10", "priority: 101")) == ["spec.priority"]
    assert refused(SMALL.replace("uri: http://small.example", "uri: ftp://x")) == ["spec.uri"]
    spaced = SMALL.replace(f"token: {TOKEN}", f"token: '{TOKEN} {TOKEN}'")
    assert refused(spaced) == ["spec.credentials.token"]
    openpai = SMALL.replace("kind: shoal", "kind: openpai").replace("user: alice, ", "")
    assert refused(openpai) == ["spec.credentials.user"]
    assert refused(SMALL + "---\n" + SMALL) == ["body"]
    several = SMALL.replace("priority: 10", "priority: -1").replace("gpuType: T4",
                                                                    "gpuType: 5")
    assert sorted(refused(several)) == ["spec.gpuType", "spec.priority"]
    as_json = json.dumps({"apiVersion": "shoal/v1", "kind": "Cluster",
                          "metadata": {"name": "x y"}, "spec": {"uri": "http://x",
                                                                "kind": "slurm"}})
    assert refused(as_json, "application/json") == ["metadata.name"]
    for text in api.texts:
        assert TOKEN not in text
    _status, answer = api.call("GET", "/clusters", "root")
    assert [c["alias"] for c in answer] == ["big"]  # type: ignore[union-attr]


def test_file_members_are_read_only_and_aliases_unique(api: Api) -> None:
    status, answer = api.call("POST", "/clusters", "root", SMALL.replace("name: small",
                                                                         "name: big"))
    assert status == 409 and "clusters file" in json.dumps(answer)
    assert api.call("PUT", "/clusters/big", "root", "priority: 1")[0] == 409
    assert api.call("DELETE", "/clusters/big", "root")[0] == 409
    assert api.call("POST", "/clusters", "root", SMALL)[0] == 201
    status, answer = api.call("POST", "/clusters", "root", SMALL)
    assert status == 409 and "already exists" in json.dumps(answer)
    assert api.call("PUT", "/clusters/nope", "root", "priority: 1")[0] == 404
    assert api.call("DELETE", "/clusters/nope", "root")[0] == 404


def test_a_change_takes_effect_at_the_next_pass_a_token_left_out_is_kept(
        api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert api.call("POST", "/clusters", "root", SMALL)[0] == 201
    assert api.call("POST", "/multi-cluster-jobs", "alice", JOB)[0] == 201
    api.step()
    assert api.members["small"].tokens == [TOKEN]
    status, answer = api.call("PUT", "/clusters/small", "root",
                              json.dumps({"priority": 60, "gpuType": None}),
                              "application/json")
    assert status == 200, answer
    assert isinstance(answer, dict) and (answer["priority"], answer["gpuType"]) == (60, None)
    api.step()
    assert api.federation.dispatcher.registry.get("small").member.priority == 60
    assert api.members["small"].tokens == [TOKEN, TOKEN]  # a new adapter, the same token
    status, answer = api.call("PUT", "/clusters/small", "root",
                              f"credentials: {{token: {NEW_TOKEN}}}")
    assert status == 200, answer
    api.step()
    assert api.members["small"].tokens[-1] == NEW_TOKEN
    assert api.members["big"].tokens == [FILE_TOKEN]  # an unchanged member keeps its adapter
    status, answer = api.call("PUT", "/clusters/small", "root", "kind: slurm\npriority: 900")
    assert status == 422 and sorted(paths(answer)) == ["spec.kind", "spec.priority"]
    status, answer = api.call("PUT", "/clusters/small", "root",
                              "credentials: {tokenFile: /etc/passwd}")
    assert status == 422 and paths(answer) == ["spec.credentials.tokenFile"]
    audits = [r.getMessage() for r in caplog.records if "audit:" in r.getMessage()]
    assert any("changed cluster 'small' (credentials.token" in a for a in audits), audits
    for text in [*api.texts, caplog.text]:
        assert TOKEN not in text and NEW_TOKEN not in text


def test_a_member_in_use_is_not_removed(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert api.call("POST", "/clusters", "root", SMALL)[0] == 201
    assert api.call("POST", "/multi-cluster-jobs", "alice", JOB)[0] == 201
    api.step()
    status, answer = api.call("DELETE", "/clusters/small", "root")
    assert status == 409 and "'mcjob'" in json.dumps(answer)
    assert api.call("POST", "/multi-cluster-jobs/mcjob/stop", "alice")[0] == 200
    for _ in range(4):
        api.step()
    status, job = api.call("GET", "/multi-cluster-jobs/mcjob", "alice")
    assert isinstance(job, dict) and job["state"] == "STOPPED" and job["ended"] is not None
    status, answer = api.call("DELETE", "/clusters/small", "root")
    assert status == 204, answer
    status, listed = api.call("GET", "/clusters", "alice")
    assert [c["alias"] for c in listed] == ["big"]  # type: ignore[union-attr]
    api.step()
    assert [m.alias for m in api.federation.dispatcher.registry.members] == ["big"]
    assert any("audit: admin 'root' removed cluster 'small'" in r.getMessage()
               for r in caplog.records)
