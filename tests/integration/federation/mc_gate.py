"""A tiny real HTTP server in front of a member for the dispatcher's fault tests: it passes
requests through, answers 500s, accepts and never answers, or forwards a request and
withholds the member's answer (a submission that reached the member, its answer lost) —
until `release`. It records every request line it got."""

from __future__ import annotations

import threading
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

HOLD_LIMIT_S = 120.0
"""A held request's safety net: a test releases it long before."""


class Mode(Enum):
    PASS = "pass"
    ERROR = "error"
    SILENT = "silent"
    """Accept, read, never answer."""
    WITHHOLD = "withhold"
    """Forward to the member; never pass a submission's (a POST's) answer back."""


class Gate:
    def __init__(self, backend: str, mode: Mode = Mode.PASS) -> None:
        self.backend = backend
        self.mode = mode
        self.requests: list[str] = []
        self.released = threading.Event()
        gate = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                gate.requests.append(f"{self.command} {self.path.split('?')[0]}")
                mode = gate.mode
                if mode is Mode.ERROR:
                    self._answer(500, b'{"errors": [{"message": "boom"}]}')
                    return
                if mode is Mode.SILENT:
                    gate.released.wait(HOLD_LIMIT_S)
                    self.close_connection = True
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("authorization", "content-type", "accept",
                                            "idempotency-key")}
                response = httpx.request(self.command, gate.backend + self.path,
                                         content=body, headers=headers, timeout=30)
                if mode is Mode.WITHHOLD and self.command == "POST":
                    gate.released.wait(HOLD_LIMIT_S)
                    self.close_connection = True
                    return
                self._answer(response.status_code, response.content,
                             response.headers.get("content-type", "application/json"))

            def _answer(self, status: int, body: bytes,
                        content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def set(self, mode: Mode) -> None:
        """Change mode; requests held so far are let go (their connections closed)."""
        self.mode = mode
        self.released.set()
        self.released = threading.Event()

    def count(self, line: str) -> int:
        return sum(1 for r in self.requests if r == line)

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
