"""`GET /api/v1/placements`: what holds each node now — the tasks bound to a node with their
GPUs, job, user and queue, by node, job and task; ended tasks and pending ones hold
nothing; `node` filters, `limit`/`after` page."""

from __future__ import annotations

from server_helpers import Api, job_yaml

from shoal.api import Bind, Resources, TaskRef, TaskState


def bind(api: Api, job: str, node: str, gpus: list[tuple[int, ...]]) -> None:
    api.repository.record_binds([Bind(TaskRef(job, "worker", i), node, held,
                                      Resources.of(cpu=2000, gpu=len(held)))
                                 for i, held in enumerate(gpus)], "placed by the test")


def test_placements_say_what_holds_each_gpu(api: Api) -> None:
    assert api.submit(job_yaml("train", queue="team-a", replicas=2), who="alice").status_code == 201
    assert api.submit(job_yaml("eval", replicas=2), who="bob").status_code == 201
    assert api.submit(job_yaml("waits", replicas=1), who="bob").status_code == 201
    bind(api, "train", "gpu-1", [(0,), (1,)])
    bind(api, "eval", "gpu-0", [(3,), (5,)])
    api.repository.transition_task(TaskRef("eval", "worker", 1), TaskState.RUNNING, "test")
    api.repository.transition_task(TaskRef("eval", "worker", 1), TaskState.SUCCEEDED, "test")

    answer = api.request("GET", "/api/v1/placements", "bob")
    assert answer.status_code == 200, answer.text
    got = [(p["node"], p["job"], p["task"], p["gpus"], p["user"], p["queue"], p["state"])
           for p in answer.json()]
    assert got == [("gpu-0", "eval", "worker-0", [3], "bob", "default", "Bound"),
                   ("gpu-1", "train", "worker-0", [0], "alice", "team-a", "Bound"),
                   ("gpu-1", "train", "worker-1", [1], "alice", "team-a", "Bound")]

    only = api.request("GET", "/api/v1/placements?node=gpu-1&limit=1", "bob").json()
    assert [p["name"] for p in only] == ["gpu-1/train/worker-0"]
    rest = api.request("GET", "/api/v1/placements?node=gpu-1&after=gpu-1/train/worker-0",
                       "bob").json()
    assert [p["name"] for p in rest] == ["gpu-1/train/worker-1"]
    assert api.request("GET", "/api/v1/placements?node=nowhere", "bob").json() == []
    wrong = api.request("GET", "/api/v1/placements?after=gpu-9/x/worker-0", "bob")
    assert wrong.status_code == 422 and wrong.json()["errors"][0]["path"] == "query.after"
