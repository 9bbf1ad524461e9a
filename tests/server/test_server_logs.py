"""Reading and following a task's log over the REST API: bounded reads, follows that end
with the task or with their client, the per-user cap on open follows, and 100 follows open
at once without starving the other routes (over real sockets: `live_server`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import live_server, log_paths
from server_helpers import Api, job_yaml

from shoal.api import TaskRef
from shoal.client import ShoalClient
from shoal.client.client import LOG_PAGE
from shoal.server import create_app
from shoal.server.errors import ApiError
from shoal.server.logs import MAX_READ, FollowSlots


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


def test_bytes_a_source_lost_are_skipped_and_later_ones_keep_their_offsets(
        api: Api) -> None:
    # As the Ray engine reads a task whose second attempt's node died: "two\n" is lost.
    log = {0: b"one\n", 8: b"three\n"}

    def source(ref: TaskRef, stream: str, offset: int, limit: int) -> tuple[int, bytes]:
        for start, data in log.items():
            if offset < start + len(data):
                skip = max(offset, start)
                return skip, data[skip - start:skip - start + limit]
        return offset, b""

    assert api.submit(job_yaml("train", replicas=1)).status_code == 201
    with TestClient(create_app(api.repository, api.scheduler, source)) as client:
        alice = api.headers("alice")
        lost = client.get("/api/v1/jobs/train/logs?offset=5", headers=alice)
        assert (lost.text, lost.headers["X-Shoal-Next-Offset"]) == ("three\n", "14")
        part = client.get("/api/v1/jobs/train/logs?offset=2&limit=2", headers=alice)
        assert (part.text, part.headers["X-Shoal-Next-Offset"]) == ("e\n", "4")
        api.scheduler.cancel("train")  # a follow drains the log of a job that ended
        with client.stream("GET", "/api/v1/jobs/train/logs?follow=true",
                           headers=alice) as stream:
            assert b"".join(stream.iter_bytes()) == b"one\nthree\n"


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


def test_read_without_follow_is_bounded(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=1)).status_code == 201
    write(api, "train.worker-0", "0123456789" * 10)
    first = api.request("GET", "/api/v1/jobs/train/logs?limit=30", "alice")
    assert (first.text, first.headers["X-Shoal-Next-Offset"]) == ("0123456789" * 3, "30")
    rest = api.request("GET", "/api/v1/jobs/train/logs?offset=30", "alice")
    assert (len(rest.text), rest.headers["X-Shoal-Next-Offset"]) == (70, "100")
    too_much = api.request("GET", f"/api/v1/jobs/train/logs?limit={MAX_READ + 1}", "alice")
    assert (too_much.status_code, too_much.json()["errors"][0]["path"]) == (422, "query.limit")


def test_follow_slots_are_counted_per_user() -> None:
    slots = FollowSlots(per_user=2)
    slots.take("alice")
    slots.take("alice")
    slots.take("bob")
    with pytest.raises(ApiError) as refused:
        slots.take("alice")
    assert (refused.value.status, refused.value.errors[0].path) == (429, "query.follow")
    assert (slots.open("alice"), slots.open("bob"), slots.open()) == (2, 1, 3)
    slots.give_back("alice")
    slots.take("alice")  # a slot given back can be taken again
    assert slots.open() == 3


DEADLINE = 60.0  # a safety net on a loaded machine, not a timing assertion


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"not within {DEADLINE} s: {what}"
        time.sleep(0.02)


def open_follow(url: str, token: str, job: str) -> tuple[socket.socket, bytes]:
    """A raw `logs?follow=true` request; returns the socket and the answer's head."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=DEADLINE)
    sock.sendall(f"GET /api/v1/jobs/{job}/logs?follow=true HTTP/1.1\r\nHost: {host}\r\n"
                 f"Authorization: Bearer {token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(4096)
        assert data, f"connection closed before the answer's head: {head!r}"
        head += data
    return sock, head


def test_open_follows_do_not_starve_the_api(api: Api) -> None:
    """100 follows of a silent task over real sockets: every other route still answers, the
    101st follow of the same user is refused, a client that leaves frees its slot, and the
    cancel ends every stream. The old follow held a worker thread each (there are 40), so
    `GET /jobs`, `/users/me` and cancel waited until the task wrote."""
    assert api.log_dir is not None
    app = create_app(api.repository, api.scheduler, log_paths(api.log_dir),
                     follows_per_user=100)
    follows: FollowSlots = app.state.follows
    assert api.submit(job_yaml("quiet", replicas=1)).status_code == 201
    sockets: list[socket.socket] = []
    with live_server(app) as url, httpx.Client(base_url=url, timeout=DEADLINE) as client:
        try:
            for _ in range(100):
                sock, head = open_follow(url, api.tokens["alice"], "quiet")
                sockets.append(sock)
                assert head.startswith(b"HTTP/1.1 200"), head
            assert follows.open("alice") == 100

            alice = api.headers("alice")
            listed = client.get("/api/v1/jobs", headers=alice)
            assert listed.status_code == 200, listed.text
            assert [j["metadata"]["name"] for j in listed.json()["items"]] == ["quiet"]
            me = client.get("/api/v1/users/me", headers=alice)
            assert (me.status_code, me.json()["name"]) == (200, "alice")

            over = client.get("/api/v1/jobs/quiet/logs?follow=true", headers=alice)
            assert over.status_code == 429, over.text
            assert over.json()["errors"][0]["path"] == "query.follow"
            assert follows.open("alice") == 100  # a refused follow holds no slot
            with client.stream("GET", "/api/v1/jobs/quiet/logs?follow=true",
                               headers=api.headers("root")) as admin:
                assert admin.status_code == 200  # the cap is per user
                wait_until(lambda: follows.open("root") == 1, "root's follow counted")
            wait_until(lambda: follows.open("root") == 0, "root's closed follow freed")

            sockets.pop().close()
            wait_until(lambda: follows.open("alice") == 99, "a client that left freed")

            cancelled = client.post("/api/v1/jobs/quiet/cancel", headers=alice)
            assert cancelled.status_code == 200, cancelled.text
            wait_until(lambda: follows.open() == 0, "every stream ended with the job")
            for sock in sockets:
                tail = b""
                while data := sock.recv(4096):
                    tail += data
                assert tail.endswith(b"0\r\n\r\n")  # the chunked stream's proper end
        finally:
            for sock in sockets:
                sock.close()


def test_the_client_reads_a_long_log_page_by_page(api: Api) -> None:
    """Without `follow` the server answers at most a page; `ShoalClient.logs` asks for the
    next from `X-Shoal-Next-Offset` until the log is read, and a character that a page
    boundary splits still comes out whole."""
    assert api.submit(job_yaml("train", replicas=1)).status_code == 201
    text = "x" * (LOG_PAGE - 1) + "é" + "step\n" * 300_000  # é straddles the first page's end
    write(api, "train.worker-0", text)
    shoal = ShoalClient(http=api.client, token=api.tokens["alice"])
    with shoal.logs("train") as stream:
        assert "".join(stream) == text
    with shoal.logs("train", offset=LOG_PAGE + 1) as stream:
        assert "".join(stream) == text[LOG_PAGE:]


def test_task_names_are_matched_exactly(api: Api) -> None:
    assert api.submit(job_yaml("train", replicas=2)).status_code == 201
    write(api, "train.worker-1", "one\n")
    assert api.request("GET", "/api/v1/jobs/train/logs?task=worker/1", "alice").text == "one\n"
    for wrong in ("worker-01", "worker-2", "worker-", "worker-1x", "worker--1", "worker-٣",
                  "worker-" + "9" * 5000, "other-0"):
        answer = api.request("GET", "/api/v1/jobs/train/logs", "alice",
                             params={"task": wrong})
        assert (answer.status_code, answer.json()["errors"][0]["path"]) == (404, "query.task")
