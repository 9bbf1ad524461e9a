"""The toy TrainingJob's wire protocol: one JSON object per line over TCP, one reply per
request; standard library only. Shared by master.py, pserver.py and trainer.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import socketserver
import sys
import time
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def log(*words: object) -> None:
    role = f"{os.environ.get('SHOAL_TASK_GROUP', '?')}/{os.environ.get('SHOAL_TASK_INDEX', '?')}"
    print(f"[{role}]", *words, flush=True)


def endpoints(group: str) -> list[tuple[str, int]]:
    """The (host, port) of each task of `group`, as Shoal tells every task at launch."""
    listed = os.environ.get(f"SHOAL_{group.upper().replace('-', '_')}_HOSTS", "")
    out = []
    for item in filter(None, listed.split(",")):
        host, port = item.rsplit(":", 1)
        out.append((host, int(port)))
    return out


def serve(handle: Handler) -> socketserver.ThreadingTCPServer:
    """Serve `handle` on this task's own port (SHOAL_TASK_PORT), every interface."""

    class _Lines(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for line in self.rfile:
                reply = handle(json.loads(line))
                self.wfile.write((json.dumps(reply) + "\n").encode())
                self.wfile.flush()

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    return socketserver.ThreadingTCPServer(("", int(os.environ["SHOAL_TASK_PORT"])), _Lines)


def serve_until_stopped(handle: Handler, serving: str, done: Callable[[], str]) -> None:
    """Serve `handle` on this task's port until Shoal stops the task (SIGTERM), then say
    `done()` and exit 0: a role that never ends on its own (the master, a pserver)."""
    server = serve(handle)

    def stop(signum: int, _frame: object) -> None:
        log(f"stopped by signal {signum} after {done()}")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    log(f"{serving} on port {os.environ['SHOAL_TASK_PORT']}")
    server.serve_forever()


class Peer:
    """A connection to one server, opened when it listens (its task may start after ours)."""

    def __init__(self, host: str, port: int, wait: float = 120.0) -> None:
        deadline = time.monotonic() + wait
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=30)
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"nobody listens on {host}:{port}")
                time.sleep(0.1)
        self._file = self._sock.makefile("rwb")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self._file.write((json.dumps(request) + "\n").encode())
        self._file.flush()
        line = self._file.readline()
        if not line:
            sys.exit("the server closed the connection")
        reply: dict[str, Any] = json.loads(line)
        return reply
