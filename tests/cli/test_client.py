"""`shoal.client.ShoalClient` against the real API app (FastAPI's TestClient) over a SQLite
store, with a store-backed stand-in for the control plane: views, errors as
`ShoalApiError` with their field paths, pagination, the idempotent retry of a submission,
and logs (against a small fake route of the documented contract)."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient
from shoal_documents import job_yaml
from store_scheduler import StoreScheduler

from shoal.api import (
    JobState,
    Node,
    Resources,
    TaskRef,
    TaskState,
    VirtualCluster,
)
from shoal.client import (
    ShoalApiError,
    ShoalClient,
    ShoalConnectionError,
    ShoalError,
    ShoalTimeoutError,
    spec_body,
    wait_until_healthy,
)
from shoal.executors.local import free_port
from shoal.server import create_app
from shoal.server.errors import ApiError, install_error_handlers
from shoal.server.logs import file_logs
from shoal.store import Repository, open_store


@dataclass
class Api:
    http: TestClient
    tokens: dict[str, str]

    def client(self, who: str | None = "alice") -> ShoalClient:
        return ShoalClient(http=self.http, token=None if who is None else self.tokens[who],
                           retry_delay=0)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    store = open_store(f"sqlite:///{tmp_path / 'shoal.db'}")
    store.migrate()
    repository = Repository(store)
    repository.create_user("alice", queues=["default", "team-a"])
    repository.create_user("bob", queues=["default"])
    repository.create_user("root", admin=True)
    tokens = {name: repository.issue_token(name) for name in ("alice", "bob", "root")}
    repository.put_node(Node("gpu-0", Resources.of(cpu=32000, memory=262144, gpu=8),
                             labels={"gpu-type": "a100"}))
    repository.put_virtual_cluster(VirtualCluster("team-a"))
    with TestClient(create_app(repository, StoreScheduler(repository))) as http:
        yield Api(http, tokens)
    store.close()


# ---- jobs ------------------------------------------------------------------------------------

def test_submit_get_and_list_return_views(api: Api) -> None:
    shoal = api.client()
    job = shoal.submit(job_yaml())
    assert (job.name, job.user, job.queue, job.state) == ("train", "alice", "default",
                                                          JobState.PENDING)
    assert job.groups[0].replicas == 2 and job.groups[0].command == ("python", "train.py")
    assert job.raw["metadata"]["name"] == "train" and job.events is None
    got = shoal.get_job("train")
    assert got.events and got.events[0].target == "Pending"
    assert dataclasses.replace(got, events=None) == job
    assert shoal.events("train") == list(got.events)
    assert [j.name for j in shoal.list_jobs().items] == ["train"]


def test_submit_accepts_a_mapping_and_a_file(api: Api, tmp_path: Path) -> None:
    import yaml

    shoal = api.client()
    assert shoal.submit(yaml.safe_load(job_yaml("from-dict"))).name == "from-dict"
    path = tmp_path / "job.yaml"
    path.write_text(job_yaml("from-file"))
    assert shoal.submit(path).name == "from-file"
    other = tmp_path / "other.yml"
    other.write_text(job_yaml("from-path-string"))
    assert shoal.submit(str(other)).name == "from-path-string"
    as_json = tmp_path / "job.json"
    as_json.write_text(json.dumps(yaml.safe_load(job_yaml("from-json-file"))))
    assert shoal.submit(as_json).name == "from-json-file"


def test_waiting_for_a_server_that_never_answers_gives_up() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert wait_until_healthy(url, timeout=0.3) is False
    assert wait_until_healthy(url, timeout=30, starting=lambda: False) is False


def test_specs_travel_as_json_when_they_are_json(tmp_path: Path) -> None:
    document = {"apiVersion": "shoal/v1", "kind": "Job"}
    assert spec_body(document) == ("application/json", json.dumps(document).encode())
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "a.yaml").write_text("kind: Job\n")
    assert spec_body(tmp_path / "a.json") == ("application/json", b"{}")
    assert spec_body(str(tmp_path / "a.yaml")) == ("application/yaml", b"kind: Job\n")
    assert spec_body("kind: Job\n") == ("application/yaml", b"kind: Job\n")


def test_pagination_iterates_every_page_in_order(api: Api) -> None:
    shoal = api.client()
    names = [f"job-{i}" for i in range(5)]
    for name in names:
        shoal.submit(job_yaml(name))
    first = shoal.list_jobs(limit=2)
    assert [j.name for j in first.items] == names[:2] and first.next == "job-1"
    assert [j.name for j in shoal.iter_jobs(page_size=2)] == names
    assert [j.name for j in shoal.iter_jobs(queue="team-a")] == []
    assert len(list(shoal.iter_jobs(state=JobState.PENDING, user="alice"))) == 5


def test_cancel_and_wait(api: Api) -> None:
    alice, bob = api.client("alice"), api.client("bob")
    alice.submit(job_yaml())
    with pytest.raises(ShoalApiError) as refused:
        bob.cancel("train")
    assert refused.value.status == 403 and "belongs to 'alice'" in refused.value.message
    with pytest.raises(ShoalTimeoutError, match="still Pending"):
        alice.wait("train", timeout=0.05, interval=0.01)
    assert alice.cancel("train").state is JobState.CANCELLED
    assert alice.wait("train", timeout=1).state is JobState.CANCELLED
    assert alice.wait("train", states=["Cancelled"]).terminal


# ---- errors ------------------------------------------------------------------------------------

def test_missing_and_bad_tokens_are_401(api: Api) -> None:
    for shoal in (api.client(None), ShoalClient(http=api.http, token="nope")):
        with pytest.raises(ShoalApiError) as error:
            shoal.submit(job_yaml())
        assert error.value.status == 401 and error.value.path == "header.Authorization"
        assert error.value.endpoint == "POST /api/v1/jobs"


def test_forbidden_queue_is_403_with_the_field_path(api: Api) -> None:
    with pytest.raises(ShoalApiError) as error:
        api.client("bob").submit(job_yaml(queue="team-a"))
    assert error.value.status == 403 and error.value.path == "spec.queue"
    assert "may not submit to queue 'team-a'" in str(error.value)
    assert error.value.is_client_error


def test_unknown_job_is_404(api: Api) -> None:
    with pytest.raises(ShoalApiError) as error:
        api.client().get_job("ghost")
    assert (error.value.status, error.value.path) == (404, "path.name")
    assert error.value.endpoint == "GET /api/v1/jobs/ghost"


def test_invalid_spec_is_422_with_every_problem(api: Api) -> None:
    bad = job_yaml().replace("replicas: 2", "replicas: -1").replace(
        "queue: default", "queue: default\n  minAvailable: -1")
    with pytest.raises(ShoalApiError) as error:
        api.client().submit(bad)
    assert error.value.status == 422 and len(error.value.errors) >= 2
    assert [e.path for e in error.value.errors] == ["spec.minAvailable",
                                                    "spec.taskGroups[0].replicas"]
    with pytest.raises(ShoalApiError) as query:
        api.client().list_jobs(limit=0)
    assert (query.value.status, query.value.path) == (422, "query.limit")


def test_impossible_job_is_422_with_the_reason(api: Api) -> None:
    with pytest.raises(ShoalApiError) as error:
        api.client().submit(job_yaml(gpu=16, cpu="16"))
    assert error.value.status == 422 and error.value.reason is not None
    assert error.value.reason["kind"] == "Unschedulable"


def test_a_body_that_is_not_shoals_json_still_gives_a_message() -> None:
    transport = httpx.MockTransport(lambda _r: httpx.Response(502, text="<html>Bad gateway"))
    shoal = ShoalClient(http=httpx.Client(transport=transport, base_url="http://proxy"))
    with pytest.raises(ShoalApiError, match="HTTP 502 Bad Gateway: <html>Bad gateway"):
        shoal.nodes()
    ok = httpx.MockTransport(lambda _r: httpx.Response(200, text="<html>hello"))
    other = ShoalClient(http=httpx.Client(transport=ok, base_url="http://elsewhere"))
    with pytest.raises(ShoalError, match="not Shoal's JSON"):
        other.nodes()


# ---- connections and retries ------------------------------------------------------------------

class LosesFirstAnswer(httpx.BaseTransport):
    """Delivers every request, but the first answer is lost (a timeout after the server
    acted), as when a network drops mid-request."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        response = self.inner.handle_request(request)
        if len(self.seen) == 1:
            raise httpx.ReadTimeout("lost", request=request)
        return response


def test_a_submission_retried_after_a_timeout_is_stored_once(api: Api) -> None:
    transport = LosesFirstAnswer(api.http._transport)
    http = httpx.Client(transport=transport, base_url="http://testserver")
    shoal = ShoalClient(http=http, token=api.tokens["alice"], retry_delay=0)
    job = shoal.submit(job_yaml())
    assert job.name == "train" and len(transport.seen) == 2
    keys = {r.headers["Idempotency-Key"] for r in transport.seen}
    assert len(keys) == 1 and len(next(iter(keys))) == 36  # one uuid4, sent twice
    assert [j.name for j in api.client().iter_jobs()] == ["train"]


def test_cancel_is_not_retried(api: Api) -> None:
    api.client().submit(job_yaml())
    transport = LosesFirstAnswer(api.http._transport)
    shoal = ShoalClient(http=httpx.Client(transport=transport, base_url="http://testserver"),
                        token=api.tokens["alice"], retry_delay=0)
    with pytest.raises(ShoalConnectionError, match="timed out"):
        shoal.cancel("train")
    assert len(transport.seen) == 1


def test_unreachable_server_names_the_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with ShoalClient(f"http://127.0.0.1:{port}", "t", retry_delay=0) as shoal, \
            pytest.raises(ShoalConnectionError) as error:
        shoal.health()
    assert f"http://127.0.0.1:{port}" in str(error.value)
    assert error.value.url == f"http://127.0.0.1:{port}"


# ---- cluster and users ---------------------------------------------------------------------

def test_cluster_views(api: Api) -> None:
    shoal = api.client()
    [node] = shoal.nodes()
    assert node.name == "gpu-0" and node.labels == {
        "gpu-type": "a100", "kubernetes.io/hostname": "gpu-0"}
    assert node.capacity["gpu"] == 8 and not node.unschedulable
    assert {vc.name for vc in shoal.virtual_clusters()} >= {"team-a"}
    classes = shoal.priority_classes()
    assert [pc.value for pc in classes] == sorted(pc.value for pc in classes)
    assert any(pc.name == "normal" and pc.global_default for pc in classes)
    assert shoal.health() == "ok"


def test_create_virtual_clusters_is_for_admins(api: Api) -> None:
    spec = ("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team-b}\n"
            "spec: {min: {gpu: 2}, weight: 2}\n")
    with pytest.raises(ShoalApiError) as error:
        api.client("alice").create_virtual_clusters(spec)
    assert error.value.status == 403
    [created] = api.client("root").create_virtual_clusters(spec)
    assert (created.name, created.parent, created.weight) == ("team-b", "root", 2)
    with pytest.raises(ShoalApiError) as again:
        api.client("root").create_virtual_clusters(spec)
    assert (again.value.status, again.value.path) == (409, "metadata.name")
    closed = spec.replace("team-b", "team-c").replace("weight: 2", "state: Closed, priority: 3")
    [made] = api.client("root").create_virtual_clusters(closed)
    assert (made.state, made.priority) == ("Closed", 3)
    listed = {vc.name: vc for vc in api.client("root").virtual_clusters()}
    assert (listed["team-b"].state, listed["team-c"].state) == ("Open", "Closed")


def test_resource_flavors_are_created_by_admins_and_listed_with_their_nodes(api: Api
                                                                            ) -> None:
    spec = ("apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: a100}\n"
            "spec: {nodeLabels: {gpu-type: a100}}\n---\n"
            "apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: spot}\n"
            "spec: {nodeLabels: {lifecycle: spot}}\n")
    assert api.client("alice").resource_flavors() == []
    with pytest.raises(ShoalApiError) as error:
        api.client("alice").create_resource_flavors(spec)
    assert error.value.status == 403
    created = api.client("root").create_resource_flavors(spec)
    assert [(f.name, f.node_labels, f.nodes) for f in created] == [
        ("a100", {"gpu-type": "a100"}, 1), ("spot", {"lifecycle": "spot"}, 0)]
    listed = api.client("alice").resource_flavors()
    assert listed == created and listed[0].raw["nodeLabels"] == {"gpu-type": "a100"}
    with pytest.raises(ShoalApiError) as again:
        api.client("root").create_resource_flavors(spec)
    assert (again.value.status, again.value.path) == (409, "metadata.name")


def test_create_user_then_me_with_their_token(api: Api) -> None:
    created = api.client("root").create_user("carol", queues=["team-a"])
    assert created.token and created.queues == ("team-a",) and not created.admin
    me = ShoalClient(http=api.http, token=created.token).me()
    assert (me.name, me.queues, me.token) == ("carol", ("team-a",), None)
    with pytest.raises(ShoalApiError) as error:
        api.client("alice").create_user("dave")
    assert error.value.status == 403


# ---- logs ------------------------------------------------------------------------------------

def fake_logs_app() -> FastAPI:
    """The documented logs contract, served from memory."""
    app = FastAPI()
    install_error_handlers(app)
    texts = {("worker-0", "stdout"): "line 1\nline 2\n", ("worker-1", "stderr"): "oops\n"}

    @app.get("/api/v1/jobs/{name}/logs")
    def logs(name: str, task: str = "worker-0", stream: str = "stdout", follow: bool = False,
             offset: int = 0) -> PlainTextResponse:
        if name != "train" or (task, stream) not in texts:
            raise ApiError(404, f"no task {task!r} in job {name!r}", "query.task")
        text = texts[task, stream][offset:] + ("(followed)\n" if follow else "")
        return PlainTextResponse(text, headers={"X-Shoal-Task": task})

    return app


def test_logs_stream_the_text_and_name_the_task() -> None:
    with TestClient(fake_logs_app()) as http:
        shoal = ShoalClient(http=http, token="t")
        stream = shoal.logs("train")
        assert stream.task == "worker-0" and "".join(stream) == "line 1\nline 2\n"
        with shoal.logs("train", task="worker-1", stream="stderr", follow=True) as err:
            assert "".join(err) == "oops\n(followed)\n"
        assert "".join(shoal.logs("train", offset=7)) == "line 2\n"
        with pytest.raises(ShoalApiError) as error:
            shoal.logs("train", task="worker-9")
        assert (error.value.status, error.value.path) == (404, "query.task")


def test_task_views_parse_exit_codes_when_reported() -> None:
    from shoal.client import TaskView

    task = TaskView.from_json({"group": "worker", "index": 1, "state": "Failed",
                               "node": "n", "gpus": [3], "startTime": 5, "exitCode": 2})
    assert (task.name, task.state, task.exit_code, task.gpus) == (
        "worker-1", TaskState.FAILED, 2, (3,))


def test_logs_from_the_real_route(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'shoal.db'}")
    store.migrate()
    repository = Repository(store)
    repository.create_user("alice", queues=["default"])
    token = repository.issue_token("alice")
    repository.put_node(Node("gpu-0", Resources.of(cpu=32000, memory=262144, gpu=8)))

    def paths(ref: TaskRef) -> tuple[Path, Path]:
        return tmp_path / f"{ref.group}-{ref.index}.out", tmp_path / f"{ref.group}-{ref.index}.err"

    (tmp_path / "worker-1.out").write_text("one\ntwo\n")
    with TestClient(create_app(repository, StoreScheduler(repository), file_logs(paths))) as http:
        shoal = ShoalClient(http=http, token=token)
        shoal.submit(job_yaml())
        stream = shoal.logs("train", task="worker-1", offset=4)
        assert (stream.task, "".join(stream)) == ("worker-1", "two\n")
        assert "".join(shoal.logs("train", stream="stderr")) == ""
        with pytest.raises(ShoalApiError) as error:
            shoal.logs("train", task="worker-5")
        assert (error.value.status, error.value.path) == (404, "query.task")
    store.close()


def test_tasks_are_paged_and_jobs_deleted(api: Api) -> None:
    shoal = api.client()
    job = shoal.submit(job_yaml("train"))
    assert job.task_counts == {TaskState.PENDING: 2} and job.task_total == 2
    first = shoal.tasks("train", limit=1)
    assert [t.name for t in first.items] == ["worker-0"] and first.next == "worker-0"
    assert [t.name for t in shoal.iter_tasks("train", page_size=1)] == ["worker-0",
                                                                         "worker-1"]
    listed = shoal.list_jobs().items[0]
    assert listed.groups == () and listed.task_counts == {TaskState.PENDING: 2}
    with pytest.raises(ShoalApiError) as refused:
        api.client("bob").delete_job("train")
    assert refused.value.status == 403
    deleted = shoal.delete_job("train")
    assert deleted.deleted and deleted.name == "train"
    with pytest.raises(ShoalApiError) as gone:
        shoal.get_job("train")
    assert gone.value.status == 404
