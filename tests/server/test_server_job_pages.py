"""Bounded answers over the REST API: job summaries with task counts, a job's tasks and
events a page at a time, a maximum `limit` on every list; deleting jobs; idempotency keys
per user."""

from __future__ import annotations

from server_helpers import Api, job_yaml

from shoal.api import Bind, JobState, Node, Resources, TaskRef, TaskState
from shoal.server.jobs import MAX_PAGE, MAX_TASK_PAGE
from shoal.server.paging import MAX_LIST

BIG = 10_000


def big_job(name: str, replicas: int = BIG) -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: default
  taskGroups:
    - name: many
      replicas: {replicas}
      resources: {{cpu: 100m, memory: 1Mi}}
      command: ["true"]
"""


def test_a_10000_task_job_keeps_every_answer_small(api: Api) -> None:
    # A node that holds it: the job is admitted.
    api.repository.put_node(Node("wide", Resources.of(cpu=1_000_000, memory=1 << 30)))
    answer = api.submit(big_job("big"))
    assert answer.status_code == 201, answer.text[:500]
    assert len(answer.content) < 50_000
    assert answer.json()["status"]["taskCounts"] == {"Pending": BIG}
    assert api.submit(job_yaml("small")).status_code == 201

    listed = api.request("GET", "/api/v1/jobs?limit=10", "bob")
    assert listed.status_code == 200
    assert len(listed.content) < 50_000
    items = {j["metadata"]["name"]: j for j in listed.json()["items"]}
    assert items["big"]["status"]["taskCounts"] == {"Pending": BIG}
    assert items["small"]["status"]["taskCounts"] == {"Pending": 2}
    assert "tasks" not in items["big"]["status"] and "taskGroups" not in items["big"]["spec"]

    detail = api.request("GET", "/api/v1/jobs/big", "bob")
    assert detail.status_code == 200 and len(detail.content) < 50_000

    seen: list[str] = []
    after = ""
    while True:
        got = api.request("GET", f"/api/v1/jobs/big/tasks?limit={MAX_TASK_PAGE}{after}", "bob")
        assert got.status_code == 200, got.text[:500]
        page = got.json()
        seen += [t["name"] for t in page["items"]]
        if page["next"] is None:
            break
        after = f"&after={page['next']}"
    assert seen == [f"many-{i}" for i in range(BIG)]


def test_tasks_and_events_are_paged(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=5)).status_code == 201
    api.repository.record_binds([Bind(TaskRef("train", "worker", i), "gpu-0", (i,),
                                      Resources.of(cpu=2000)) for i in range(5)], "test")
    first = api.request("GET", "/api/v1/jobs/train/tasks?limit=2", "bob").json()
    assert [t["name"] for t in first["items"]] == ["worker-0", "worker-1"]
    assert first["items"][1]["gpus"] == [1] and first["next"] == "worker-1"
    rest = api.request("GET", "/api/v1/jobs/train/tasks?limit=3&after=worker-1", "bob").json()
    assert [t["name"] for t in rest["items"]] == ["worker-2", "worker-3", "worker-4"]
    assert rest["next"] == "worker-4"
    assert api.request("GET", "/api/v1/jobs/train/tasks?after=worker-4",
                       "bob").json() == {"items": [], "next": None}

    everything = api.request("GET", "/api/v1/jobs/train/events", "bob").json()
    assert everything["next"] is None and len(everything["items"]) == 7  # +5 binds, Running
    ids = [e["id"] for e in everything["items"]]
    assert ids == sorted(ids)
    page = api.request("GET", "/api/v1/jobs/train/events?limit=4", "bob").json()
    assert page["items"] == everything["items"][:4] and page["next"] == ids[3]
    rest_events = api.request("GET", f"/api/v1/jobs/train/events?after={ids[3]}",
                              "bob").json()
    assert rest_events["items"] == everything["items"][4:]
    summary = api.request("GET", "/api/v1/jobs/train", "bob").json()["status"]
    assert summary["taskCounts"] == {"Bound": 5} and summary["state"] == "Running"
    assert summary["events"] == everything["items"]


def test_the_detail_carries_only_the_latest_events(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=30, gpu=0, cpu="1")).status_code == 201
    api.repository.record_binds([Bind(TaskRef("train", "worker", i), "gpu-0", (),
                                      Resources.of(cpu=100)) for i in range(30)], "test")
    api.repository.stop_job("train", JobState.CANCELLED, "test")
    everything = api.request("GET", "/api/v1/jobs/train/events?limit=1000", "bob").json()
    assert len(everything["items"]) > 50
    detail = api.request("GET", "/api/v1/jobs/train", "bob").json()
    assert detail["status"]["events"] == everything["items"][-50:]


def test_bad_pages_are_422_or_404_with_the_field(api: Api) -> None:
    assert api.submit(job_yaml("train")).status_code == 201
    for url, status, path in (
            ("/api/v1/jobs/train/tasks?after=worker-9", 422, "query.after"),
            ("/api/v1/jobs/train/tasks?after=nonsense", 422, "query.after"),
            ("/api/v1/jobs/train/tasks?limit=0", 422, "query.limit"),
            ("/api/v1/jobs/train/events?after=-1", 422, "query.after"),
            ("/api/v1/jobs/ghost/tasks", 404, "path.name"),
            ("/api/v1/jobs/ghost/events", 404, "path.name"),
            ("/api/v1/nodes?after=ghost", 422, "query.after")):
        answer = api.request("GET", url, "alice")
        assert answer.status_code == status, url
        assert answer.json()["errors"][0]["path"] == path, url


def test_every_list_has_a_maximum_limit(api: Api) -> None:
    assert api.submit(job_yaml("train")).status_code == 201
    for url, maximum in (("/api/v1/jobs", MAX_PAGE), ("/api/v1/jobs/train/tasks", MAX_TASK_PAGE),
                         ("/api/v1/jobs/train/events", MAX_TASK_PAGE),
                         ("/api/v1/nodes", MAX_LIST), ("/api/v1/virtual-clusters", MAX_LIST),
                         ("/api/v1/priority-classes", MAX_LIST), ("/api/v1/placements", MAX_LIST)):
        assert api.request("GET", f"{url}?limit={maximum}", "alice").status_code == 200, url
        answer = api.request("GET", f"{url}?limit={maximum + 1}", "alice")
        assert answer.status_code == 422, url
        assert answer.json()["errors"][0]["path"] == "query.limit"


def test_catalog_lists_continue_after_a_name(api: Api) -> None:
    names = [n["name"] for n in api.request("GET", "/api/v1/nodes", "alice").json()]
    assert names == ["gpu-0", "gpu-1"]
    first = api.request("GET", "/api/v1/nodes?limit=1", "alice").json()
    assert [n["name"] for n in first] == ["gpu-0"]
    rest = api.request("GET", "/api/v1/nodes?limit=1&after=gpu-0", "alice").json()
    assert [n["name"] for n in rest] == ["gpu-1"]
    classes = api.request("GET", "/api/v1/priority-classes", "alice").json()
    after = api.request("GET", f"/api/v1/priority-classes?after={classes[0]['name']}",
                        "alice").json()
    assert after == classes[1:]


def test_deleting_an_ended_job_removes_it_at_once(api: Api) -> None:
    assert api.submit(job_yaml("done"), key="k").status_code == 201
    api.repository.stop_job("done", JobState.CANCELLED, "test")
    refused = api.request("DELETE", "/api/v1/jobs/done", "bob")
    assert refused.status_code == 403
    answer = api.request("DELETE", "/api/v1/jobs/done", "alice")
    assert answer.status_code == 200, answer.text
    assert answer.json()["deleted"] is True
    assert api.request("GET", "/api/v1/jobs/done", "alice").status_code == 404
    assert api.request("GET", "/api/v1/jobs/done/events", "alice").status_code == 404
    again = api.request("DELETE", "/api/v1/jobs/done", "alice")
    assert again.status_code == 404 and again.json()["errors"][0]["path"] == "path.name"
    # The name and the key are free again: a new job, not a replay of the old one.
    reused = api.submit(job_yaml("done", replicas=3), key="k")
    assert reused.status_code == 201, reused.text
    assert reused.json()["status"]["taskCounts"] == {"Pending": 3}


def test_deleting_a_running_job_stops_it_first(api: Api) -> None:
    assert api.submit(job_yaml("busy")).status_code == 201
    api.repository.record_binds([Bind(TaskRef("busy", "worker", i), "gpu-0", (i,),
                                      Resources.of(cpu=2000)) for i in range(2)], "test")
    answer = api.request("DELETE", "/api/v1/jobs/busy", "root")  # an admin may
    assert answer.status_code == 202, answer.text
    assert answer.json()["deleted"] is False
    status = api.request("GET", "/api/v1/jobs/busy", "alice").json()["status"]
    assert status["deleting"] is True
    assert status["taskCounts"] == {TaskState.RELEASING.value: 2}
    assert api.request("DELETE", "/api/v1/jobs/busy", "alice").status_code == 202
    assert api.scheduler.sweep() == []  # its processes have not stopped yet
    api.repository.finish_stop("busy")  # they have now
    assert api.scheduler.sweep() == ["busy"]
    assert api.request("GET", "/api/v1/jobs/busy", "alice").status_code == 404
    assert api.submit(job_yaml("busy")).status_code == 201


def test_deleting_a_pending_job_removes_it(api: Api) -> None:
    assert api.submit(job_yaml("waiting")).status_code == 201
    answer = api.request("DELETE", "/api/v1/jobs/waiting", "alice")
    assert answer.status_code == 200, answer.text
    assert api.request("GET", "/api/v1/jobs", "alice").json()["items"] == []


def test_idempotency_keys_belong_to_their_user(api: Api) -> None:
    assert api.submit(job_yaml("alices-secret-job"), key="shared").status_code == 201
    bobs = api.submit(job_yaml("bobs"), who="bob", key="shared")
    assert bobs.status_code == 201, bobs.text  # another user's key is another key
    replay = api.submit(job_yaml("bobs"), who="bob", key="shared")
    assert replay.status_code == 200
    assert replay.json()["metadata"]["name"] == "bobs"
    conflict = api.submit(job_yaml("bobs2"), who="bob", key="shared")
    assert conflict.status_code == 409
    assert conflict.json()["errors"][0]["path"] == "header.Idempotency-Key"
    assert "alices-secret-job" not in conflict.text
    assert "bobs" in conflict.text
