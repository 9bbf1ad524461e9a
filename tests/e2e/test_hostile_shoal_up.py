"""Hostile inputs against a real `shoal up` (issue 14): the requests that crashed or exhausted
the server — nesting 50,000 deep (a C stack overflow in the YAML constructor), huge
`replicas`, an alias bomb, a 100 MB body — each get a small 4xx naming a path, and the
server still answers `/healthz` afterwards. A `--cluster` file nested as deep, or declaring
100,000 nodes, stops `shoal up` with a message and exit code 2 instead of a segfault or a
hang. The in-process app gets the full hostile suite in `tests/server/test_hostile_inputs.py`.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest
from test_shoal_up import Server, Servers, refused_start

SMALL = 16 * 1024
DEEP_YAML = "[" * 50_000 + "]" * 50_000


def job(replicas: int) -> str:
    return json.dumps({
        "apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": "hostile"},
        "spec": {"taskGroups": [{"name": "w", "replicas": replicas, "command": ["true"],
                                 "resources": {"cpu": "1"}}]}})


def bounded_4xx(answer: httpx.Response, path: str) -> None:
    assert 400 <= answer.status_code < 500, answer.text[:2000]
    assert len(answer.content) < SMALL
    errors = answer.json()["errors"]
    assert path in {e["path"] for e in errors}, errors


def test_crash_requests_are_refused_and_the_server_keeps_serving(server: Server) -> None:
    bomb = "a: &a [" + ", ".join(["lol"] * 10) + "]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
        for i in range(8))
    cases = [(DEEP_YAML, "application/yaml", "body"),
             (DEEP_YAML, "application/json", "body"),
             (bomb, "application/yaml", "body"),
             *((job(n), "application/json", "spec.taskGroups[0].replicas")
               for n in (1_000_000_000, 1_000_000, 2**70))]
    with server.client() as client:
        for body, content_type, path in cases:
            answer = client.post("/api/v1/jobs", content=body,
                                 headers={"Content-Type": content_type})
            bounded_4xx(answer, path)
        assert client.get("/healthz").status_code == 200
        assert client.get("/api/v1/jobs/hostile").status_code == 404


def test_a_100_mb_body_is_refused_before_it_is_sent(server: Server) -> None:
    # The request says 100 MB and sends 64 KiB: the answer comes from the length alone.
    token = (server.data / "admin.token").read_text().strip()
    head = (f"POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/yaml\r\n"
            f"Content-Length: {100 * 1024 * 1024}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(head + b"x" * 65536)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = answer.split(b"\r\n", 1)[0]
    assert status.startswith(b"HTTP/1.1 413"), answer[:500]
    assert b'"path":"body"' in answer and len(answer) < SMALL
    with server.client() as client:
        assert client.get("/healthz").status_code == 200


NODES = "apiVersion: shoal/v1\nkind: Node\nmetadata: {name: n}\nspec: {capacity: {cpu: 1}, "


@pytest.mark.parametrize(("cluster", "flags", "expected"), [
    (DEEP_YAML, (), "nested more than 32 deep"),
    (NODES + "count: 100000}\n", (), "spec.count: must be at most 10000"),
    (NODES + "count: 6}\n", ("--max-nodes", "5"), "spec.count: must be at most 5"),
])
def test_a_hostile_cluster_file_stops_shoal_up_with_a_message(
        tmp_path: Path, cluster: str, flags: tuple[str, ...], expected: str) -> None:
    (tmp_path / "cluster.yaml").write_text(cluster)
    done = refused_start(tmp_path / "data", tmp_path, *flags)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert expected in done.stderr, done.stderr[-2000:]


def test_the_limits_follow_shoal_ups_flags(tmp_path: Path) -> None:
    started = Servers(tmp_path, args=("--max-body-bytes", "100000",
                                      "--max-tasks-per-job", "3"))
    try:
        server = started.start()
        with server.client() as client:
            big = client.post("/api/v1/jobs", content=job(1) + " " * 100_000,
                              headers={"Content-Type": "application/json"})
            assert big.status_code == 413 and "limit of 100000 bytes" in big.text
            wide = client.post("/api/v1/jobs", content=job(4),
                               headers={"Content-Type": "application/json"})
            bounded_4xx(wide, "spec.taskGroups[0].replicas")
            assert "must be at most 3" in wide.text
            fits = client.post("/api/v1/jobs", content=job(3),
                               headers={"Content-Type": "application/json"})
            assert fits.status_code == 201, fits.text
    finally:
        started.close()
