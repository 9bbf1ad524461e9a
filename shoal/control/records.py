"""What the control loop keeps on disk beside the store.

- `MasterPorts`: the MASTER_PORT of each job, chosen once when its first task launches and
  kept in memory *and* in a file under the executor's root, so that a task launched after a
  restart (a bound-but-never-launched one) joins the same rendezvous as its running peers.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from shoal.executors.processes import free_port


class MasterPorts:
    """MASTER_PORT per job: memory first, then `<directory>/<job>`, else a new free port.

    A new port is claimed with link() of a complete temp file, so two writers (or a crash
    half-way) never leave a torn or a second port for one job."""

    def __init__(self, directory: Path, pick: Callable[[], int] = free_port) -> None:
        self.directory = Path(directory)
        self._pick = pick
        self._ports: dict[str, int] = {}

    def get(self, job: str) -> int:
        port = self._ports.get(job)
        if port is not None:
            return port
        path = self.directory / job
        port = self._read(path)
        if port is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{job}.{os.getpid()}.{time.monotonic_ns()}.tmp")
            tmp.write_text(str(self._pick()), encoding="utf-8")
            try:
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
            port = self._read(path)
            if port is None:
                raise OSError(f"cannot record the master port of job {job!r} in {path}")
        self._ports[job] = port
        return port

    def known(self, job: str) -> int | None:
        """The job's port if one was chosen; never chooses one."""
        port = self._ports.get(job)
        return port if port is not None else self._read(self.directory / job)

    def forget(self, job: str) -> None:
        """The job ended: its port is no longer reserved."""
        self._ports.pop(job, None)
        (self.directory / job).unlink(missing_ok=True)

    @staticmethod
    def _read(path: Path) -> int | None:
        try:
            return int(path.read_text(encoding="utf-8").strip())
        except (FileNotFoundError, ValueError):
            return None
