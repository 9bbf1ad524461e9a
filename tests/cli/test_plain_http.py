"""`shoal.client.plain_http`: the command line's transport for plain-HTTP servers sends what
httpx would (method, path and query, headers, body), hands back the status, headers and a
body streamed as it arrives, and fails with the httpx errors httpcore would raise."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from shoal.client import ShoalClient, ShoalConnectionError, ShoalServerTimeoutError
from shoal.client.plain_http import PlainHttpTransport, for_url
from shoal.executors.local import free_port


class Echo(BaseHTTPRequestHandler):
    """Answers with what it was sent, as JSON; `/chunks` streams three chunks."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/chunks":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one\n", b"two\n", b"three\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self._echo(b"")

    def do_POST(self) -> None:
        self._echo(self.rfile.read(int(self.headers["Content-Length"])))

    def _echo(self, body: bytes) -> None:
        answer = json.dumps({"method": self.command, "path": self.path,
                             "token": self.headers.get("Authorization"),
                             "body": body.decode()}).encode()
        self.send_response(201 if body else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.send_header("X-Shoal-Task", "worker-0")
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:  # quiet tests
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_request_and_its_answer_go_through_as_httpx_sends_them(echo: str) -> None:
    with httpx.Client(base_url=echo, transport=PlainHttpTransport(),
                      headers={"Authorization": "Bearer t"}) as client:
        got = client.get("/api/v1/jobs", params={"state": "Running", "after": "a b"})
        posted = client.post("/api/v1/jobs", content=b"kind: Job\n")
    assert got.status_code == 200 and got.headers["X-Shoal-Task"] == "worker-0"
    assert got.json() == {"method": "GET", "path": "/api/v1/jobs?state=Running&after=a+b",
                          "token": "Bearer t", "body": ""}
    assert posted.status_code == 201 and posted.json()["body"] == "kind: Job\n"


def test_a_streamed_body_arrives_in_its_chunks(echo: str) -> None:
    with httpx.Client(base_url=echo, transport=PlainHttpTransport()) as client, \
            client.stream("GET", "/chunks") as response:
        assert b"".join(response.iter_bytes()) == b"one\ntwo\nthree\n"


def test_a_refused_connection_is_a_connect_error() -> None:
    with httpx.Client(transport=PlainHttpTransport()) as client, \
            pytest.raises(httpx.ConnectError):
        client.get(f"http://127.0.0.1:{free_port()}/healthz")


def test_a_silent_server_is_a_read_timeout_and_the_client_says_so() -> None:
    with socket.socket() as silent:  # the kernel accepts connections; nobody ever answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with httpx.Client(transport=PlainHttpTransport(), timeout=0.2) as client, \
                pytest.raises(httpx.ReadTimeout):
            client.get(f"{url}/healthz")
        with ShoalClient(url, timeout=0.2, retry_delay=0.0, transport=for_url(url)) as shoal, \
                pytest.raises(ShoalServerTimeoutError) as raised:
            shoal.health()
    assert isinstance(raised.value, ShoalConnectionError) and raised.value.timeout == 0.2


def test_only_plain_http_gets_it() -> None:
    assert isinstance(for_url("http://127.0.0.1:8765"), PlainHttpTransport)
    assert for_url("https://shoal.example.org") is None  # TLS: httpx's own transport
    with httpx.Client(transport=PlainHttpTransport()) as client, \
            pytest.raises(httpx.UnsupportedProtocol):
        client.get("https://127.0.0.1:1/")
