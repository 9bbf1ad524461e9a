"""The app served over real sockets: uvicorn in a thread of the test process, on a free port.

For what `TestClient` cannot show: it buffers a streamed answer whole and has no connection
to keep alive or to drop. Here a test holds many follows open, drops one, and reuses a
keep-alive connection, while reading the app's own counters in the same process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from shoal.api import TaskRef
from shoal.executors.local import free_port
from shoal.server.http_protocol import OneWriteHttpProtocol
from shoal.server.logs import LogSource, file_logs


def log_paths(log_dir: Path) -> LogSource:
    """The `api` fixture's log source: task `JOB/GROUP/INDEX` → `JOB.GROUP-INDEX.out|err`."""

    def paths(ref: TaskRef) -> tuple[Path, Path]:
        stem = f"{ref.job}.{ref.group}-{ref.index}"
        return log_dir / f"{stem}.out", log_dir / f"{stem}.err"

    return file_logs(paths)


@contextmanager
def live_server(app: FastAPI, timeout: float = 60.0) -> Iterator[str]:
    """Serve `app` until the block ends, with the HTTP protocol `shoal up` serves
    (`OneWriteHttpProtocol`); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off",
                                           http=OneWriteHttpProtocol))
    thread = threading.Thread(target=server.run, name="live-server", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            assert thread.is_alive(), "uvicorn exited before serving"
            assert time.monotonic() < deadline, f"uvicorn did not start within {timeout} s"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
