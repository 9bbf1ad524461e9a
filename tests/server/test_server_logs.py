"""Reading and following a task's log over the REST API."""

from __future__ import annotations

import threading
import time

from server_helpers import Api, job_yaml


def write(api: Api, name: str, text: str, stream: str = "out") -> None:
    assert api.log_dir is not None
    api.log_dir.mkdir(exist_ok=True)
    with (api.log_dir / f"{name}.{stream}").open("a") as handle:
        handle.write(text)


def test_logs_per_task_and_stream(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=2)).status_code == 201
    write(api, "train.worker-0", "rank 0 says hi\n")
    write(api, "train.worker-1", "rank 1 says hi\n")
    write(api, "train.worker-1", "a warning\n", "err")

    first = api.request("GET", "/api/v1/jobs/train/logs", "alice")
    assert first.status_code == 200, first.text
    assert first.headers["X-Shoal-Task"] == "worker-0"
    assert first.headers["content-type"].startswith("text/plain")
    assert first.text == "rank 0 says hi\n"

    second = api.request("GET", "/api/v1/jobs/train/logs?task=worker-1", "alice")
    assert (second.text, second.headers["X-Shoal-Task"]) == ("rank 1 says hi\n", "worker-1")
    err = api.request("GET", "/api/v1/jobs/train/logs?task=worker/1&stream=stderr", "root")
    assert err.text == "a warning\n"
    tail = api.request("GET", "/api/v1/jobs/train/logs?task=worker-1&offset=7", "alice")
    assert tail.text == "says hi\n"


def test_logs_errors(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=2)).status_code == 201
    assert api.request("GET", "/api/v1/jobs/train/logs", None).status_code == 401
    other = api.request("GET", "/api/v1/jobs/train/logs", "bob")
    assert other.status_code == 403
    unknown = api.request("GET", "/api/v1/jobs/nope/logs", "alice")
    assert (unknown.status_code, unknown.json()["errors"][0]["path"]) == (404, "path.name")
    task = api.request("GET", "/api/v1/jobs/train/logs?task=worker-7", "alice")
    assert task.status_code == 404
    assert task.json()["errors"][0]["path"] == "query.task"
    assert "worker-0, worker-1" in task.json()["errors"][0]["message"]
    bad = api.request("GET", "/api/v1/jobs/train/logs?stream=both", "alice")
    assert (bad.status_code, bad.json()["errors"][0]["path"]) == (422, "query.stream")
    # A task that has not written anything yet has an empty log, not an error.
    assert api.request("GET", "/api/v1/jobs/train/logs", "alice").text == ""


def test_follow_streams_until_the_job_ends(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=1)).status_code == 201
    write(api, "train.worker-0", "step 1\n")

    def more_then_end() -> None:
        time.sleep(0.5)
        write(api, "train.worker-0", "step 2\n")
        time.sleep(0.5)
        write(api, "train.worker-0", "done\n")
        api.scheduler.cancel("train")

    writer = threading.Thread(target=more_then_end)
    writer.start()
    started = time.monotonic()
    with api.client.stream("GET", "/api/v1/jobs/train/logs?follow=true",
                           headers=api.headers("alice")) as response:
        assert response.status_code == 200
        received = "".join(response.iter_text())
    writer.join()
    assert received == "step 1\nstep 2\ndone\n"
    assert time.monotonic() - started >= 0.9  # it waited for the job's end, not the file's
