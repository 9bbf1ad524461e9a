"""`shoal.server.http_protocol`: an answer's head and body leave in one write; a head whose
body is not ready (a stream) still leaves at the loop's next turn, and nothing is reordered."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from live_server import live_server

from shoal.server.http_protocol import _CoalescingTransport

HEAD = b"HTTP/1.1 201 Created\r\ncontent-length: 5\r\n\r\n"


class _Recorder(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _run(steps: list[bytes | str]) -> tuple[list[bytes], list[list[bytes]]]:
    """Write (bytes), or 'turn' (let the loop turn), or 'close'; the writes the inner
    transport saw, and what it had seen after each step."""
    async def go() -> tuple[list[bytes], list[list[bytes]]]:
        inner = _Recorder()
        outer = _CoalescingTransport(inner)
        seen: list[list[bytes]] = []
        for step in steps:
            if step == "turn":
                await asyncio.sleep(0)
            elif step == "close":
                outer.close()
            else:
                assert isinstance(step, bytes)
                outer.write(step)
            seen.append(list(inner.writes))
        return inner.writes, seen
    return asyncio.run(go())


def test_a_head_and_its_body_leave_in_one_write() -> None:
    writes, seen = _run([HEAD, b"hello", "turn", "turn"])
    assert seen[0] == []  # held
    assert writes == [HEAD + b"hello"]


def test_a_head_without_a_body_leaves_at_the_next_turn() -> None:
    writes, seen = _run([HEAD, "turn", b"chunk"])
    assert seen[1] == [HEAD]
    assert writes == [HEAD, b"chunk"]


def test_interim_answers_and_other_bytes_are_never_held() -> None:
    writes, seen = _run([b"HTTP/1.1 100 Continue\r\n\r\n", b"raw bytes"])
    assert seen[0] == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    assert writes == [b"HTTP/1.1 100 Continue\r\n\r\n", b"raw bytes"]


def test_closing_sends_a_held_head_first() -> None:
    writes, _ = _run([HEAD, "close", "turn"])
    assert writes == [HEAD]


def test_a_streamed_answer_s_head_reaches_the_client_before_its_body_exists() -> None:
    """The stream's first part waits until the client has read the head: were the head held
    until a body part, neither would ever come."""
    app = FastAPI()
    head_read = threading.Event()

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def parts() -> AsyncIterator[bytes]:
            while not head_read.is_set():  # a thread's event: poll it, leaving the loop free
                await asyncio.sleep(0.01)
            yield b"late"
        return StreamingResponse(parts(), media_type="text/plain")

    @app.get("/plain")
    async def plain() -> dict[str, str]:
        return {"answer": "whole"}

    with live_server(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        with client.stream("GET", "/stream") as answer:
            assert answer.status_code == 200  # the head, with no body part yet
            head_read.set()
            assert answer.read() == b"late"
        for _ in range(3):  # one keep-alive connection, answers intact one after another
            assert client.get("/plain").json() == {"answer": "whole"}
