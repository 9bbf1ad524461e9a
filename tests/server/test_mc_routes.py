"""The super scheduler's REST routes (issue 19) over in-memory members: clusters for any user
without credentials, a job submitted as YAML and JSON, refused with field paths, read with
each copy's verdict, listed per owner, stopped by its owner or an admin only, its kept
copy's log — and a job's token in no response, no log line and not in the database file."""

from __future__ import annotations

import json
import logging
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_clock import Clock as RepoClock
from fastapi.testclient import TestClient
from mc_fakes import Clock, Members
from server_helpers import StoreScheduler

from shoal.api.federation import CopyState
from shoal.federation.lanes import MemberLanes
from shoal.federation.registry import load_registry
from shoal.federation.service import Federation
from shoal.server import create_app
from shoal.store import Repository, Store

TOKEN = "alice-own-token-on-big-7f3a9c"
REGISTRY_TOKEN = "registry-shared-token-55e1"

JOB = textwrap.dedent(f"""\
    protocolVersion: super-2
    name: mcjob
    secrets: {{token-big: {TOKEN}}}
    prerequisites:
      - {{name: python, type: dockerimage, uri: 'python:3.11'}}
    taskRoles:
      main:
        instances: 1
        resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: '<% $mcc.gpuNum %>'}}
        dockerImage: python
        commands: [echo hi]
    extras:
      com.microsoft.pai.runtimeplugin:
        - plugin: super_scheduler
          parameters:
            clusters:
              big: {{uri: 'http://big.example'}}
              small: {{uri: 'http://small.example'}}
            guardTimeRunning: 2s
            timeScale: 1s
            params:
              gpuNum: {{big: 2, small: 1}}
    """)


@dataclass
class McApi:
    client: TestClient
    tokens: dict[str, str]
    members: Members
    clock: Clock
    federation: Federation
    db: Path | None

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def step(self) -> None:
        self.federation.dispatcher.step(self.clock.now)
        self.clock.now += 0.5


@pytest.fixture
def mc(store: Store, tmp_path: Path) -> Iterator[McApi]:
    repository = Repository(store, clock=RepoClock())
    repository.create_user("alice", queues=["default"])
    repository.create_user("bob", queues=["default"])
    repository.create_user("root", admin=True)
    tokens = {n: repository.issue_token(n) for n in ("alice", "bob", "root")}
    (tmp_path / "reg.token").write_text(REGISTRY_TOKEN)
    registry = load_registry(textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {name: big}
        spec: {uri: 'http://big.example', kind: shoal, priority: 90, gpuType: V100,
               credentials: {tokenFile: reg.token}}
        ---
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {name: small}
        spec: {uri: 'http://small.example', kind: shoal, priority: 10,
               credentials: {tokenFile: reg.token}}
        """), base_dir=tmp_path)
    clock, members = Clock(), Members("big", "small")
    federation = Federation.assemble(registry, store, tmp_path, clock=clock, adapters=members,
                                     lanes=MemberLanes(clock), settle_s=5.0)
    app = create_app(repository, StoreScheduler(repository), federation=federation)
    db = Path(store.url.removeprefix("sqlite:///")) if store.url.startswith("sqlite") else None
    with TestClient(app) as client:
        yield McApi(client, tokens, members, clock, federation, db)
    federation.close()


def test_clusters_are_listed_for_any_user_without_credentials(mc: McApi) -> None:
    r = mc.client.get("/api/v1/clusters", headers=mc.h("bob"))
    assert r.status_code == 200
    assert [(c["alias"], c["priority"], c["gpuType"], c["reachable"]) for c in r.json()] == [
        ("big", 90, "V100", None), ("small", 10, None, None)]
    assert REGISTRY_TOKEN not in r.text and "reg.token" not in r.text
    assert mc.client.get("/api/v1/clusters").status_code == 401


def test_submit_dispatch_get_and_logs(mc: McApi, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    texts = []
    r = mc.client.post("/api/v1/multi-cluster-jobs", content=JOB,
                       headers={**mc.h("alice"), "Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    texts.append(r.text)
    assert r.json()["state"] == "WAITING" and r.json()["owner"] == "alice"
    mc.step()
    mc.members["big"].set("mcjob-big", CopyState.RUNNING)
    for _ in range(8):
        mc.step()
    r = mc.client.get("/api/v1/multi-cluster-jobs/mcjob", headers=mc.h("alice"))
    texts.append(r.text)
    job = r.json()
    assert job["kept"] == "big" and job["state"] == "RUNNING"
    copies = {c["cluster"]: c for c in job["copies"]}
    assert copies["big"]["verdict"] == "kept" and copies["big"]["remoteId"] == "mcjob-big"
    assert copies["small"]["verdict"] == "cancelled" and copies["small"]["why"]
    assert copies["small"]["state"] == "STOPPED"
    assert mc.members["small"].copies["mcjob-small"] is CopyState.STOPPED
    r = mc.client.get("/api/v1/multi-cluster-jobs/mcjob/logs", headers=mc.h("alice"))
    assert r.status_code == 200 and r.text == "log of mcjob-big"
    texts.append(r.text)
    for who in ("alice", "bob", "root"):
        texts.append(mc.client.get("/api/v1/multi-cluster-jobs", headers=mc.h(who)).text)
    assert [j["name"] for j in json.loads(texts[-3])] == ["mcjob"]
    assert json.loads(texts[-2]) == []  # bob sees only his own
    assert [j["name"] for j in json.loads(texts[-1])] == ["mcjob"]
    texts.append(mc.client.get("/api/v1/clusters", headers=mc.h("alice")).text)
    # The token went to its member, and nowhere else.
    assert mc.members["big"].tokens == [TOKEN]
    for text in texts:
        assert TOKEN not in text
    assert TOKEN not in caplog.text
    if mc.db is not None:
        for path in mc.db.parent.glob(mc.db.name + "*"):
            assert TOKEN.encode() not in path.read_bytes()


def test_json_body_and_stop_rights(mc: McApi) -> None:
    import yaml

    body = json.dumps(yaml.safe_load(JOB))
    r = mc.client.post("/api/v1/multi-cluster-jobs", content=body,
                       headers={**mc.h("alice"), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    again = mc.client.post("/api/v1/multi-cluster-jobs", content=body,
                           headers={**mc.h("alice"), "Content-Type": "application/json"})
    assert again.status_code == 409
    assert mc.client.post("/api/v1/multi-cluster-jobs/mcjob/stop",
                          headers=mc.h("bob")).status_code == 403
    assert mc.client.get("/api/v1/multi-cluster-jobs/mcjob",
                         headers=mc.h("bob")).status_code == 403
    r = mc.client.post("/api/v1/multi-cluster-jobs/mcjob/stop", headers=mc.h("root"))
    assert r.status_code == 200 and r.json()["stopRequested"] is True
    for _ in range(3):
        mc.step()
    r = mc.client.get("/api/v1/multi-cluster-jobs/mcjob", headers=mc.h("alice"))
    assert r.json()["state"] == "STOPPED" and r.json()["ended"] is not None
    assert not mc.members["big"].live() and not mc.members["small"].live()


def test_bad_jobs_are_refused_with_field_paths(mc: McApi) -> None:
    def post(text: str) -> list[dict[str, str]]:
        r = mc.client.post("/api/v1/multi-cluster-jobs", content=text,
                           headers={**mc.h("alice"), "Content-Type": "application/yaml"})
        assert r.status_code == 422, r.text
        assert TOKEN not in r.text
        errors: list[dict[str, str]] = r.json()["errors"]
        return errors

    errors = post(JOB.replace("http://small.example", "http://10.0.0.1:22"))
    plugin = "extras['com.microsoft.pai.runtimeplugin'][0].parameters"
    assert errors[0]["path"] == f"{plugin}.clusters.small.uri"
    errors = post(JOB.replace("small: 1}", "}"))
    assert any("small" in e["message"] for e in errors)
    assert mc.client.get("/api/v1/multi-cluster-jobs/nope",
                         headers=mc.h("alice")).status_code == 404
    r = mc.client.get("/api/v1/multi-cluster-jobs/mcjob/logs", headers=mc.h("alice"))
    assert r.status_code == 404
