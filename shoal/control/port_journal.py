"""The ports the control loop keeps by job, on disk: one append-only journal per directory.

`TaskPorts` (a port per task) and `MasterPorts` (a job's MASTER_PORT) keep what they chose
so that a task launched after a restart joins the same rendezvous as its running peers.
They kept one file per job, written by temp file + rename and removed when the job ended:
in a burst of one-task jobs that was four file creations and two removals per job on the
control loop's thread, about half of its time (issue 18). Here a job's ports are one line
appended to `<directory>/.journal` (a single `write`), its end one more line, and the
journal is rewritten with the live jobs only once the ended ones outnumber them.

The guarantees are the files': what was written is there after the server's process dies
(the page cache outlives it; neither was fsync'd); a line torn by a crash half-way is
skipped when read, which is the old "no file yet" — the job's ports are chosen again,
never half of them read — and ended before the next line is appended. The per-job files
of earlier versions are still read (and removed when their job ends), so a restart onto
this version keeps their ports.

A batch of lines is one `write` too (`deferred`): the control loop prepares a cycle's
launches, and forgets the jobs an exit batch ended, with the lines held back and written
together when the batch is done — before any task of it is handed to the launcher, so a
task still starts only once its ports are on disk. A drop held back and lost in a crash
leaves the ended job's ports listed as live, which the crash between the store's end and
the drop's own line always could.

Lines: `{"job": NAME, "ports": {KEY: PORT, ...}}`, and `{"job": NAME, "ports": null}` once
the job ended. One process writes a directory's journal (the server's data directory lock).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

JOURNAL = ".journal"
"""The journal's name in its directory: a dot-name, which readers of the per-job files of
earlier versions skip."""
COMPACT_AFTER = 1024
"""Ended jobs' lines the journal may hold before it is rewritten, and at least as many as
the live jobs' (so a rewrite costs no more than the lines it drops)."""

Ports = dict[str, int]
#: A journal line's JSON, compact. One encoder for every line: `json.dumps` with
#: `separators` builds a new one per call, and a burst appends four lines per job.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


class PortJournal:
    """The ports of each live job of one directory (`get`, `put`, `drop`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._live, self._legacy, self._lines = read_directory(self.directory)
        self._fd: int | None = None
        self._held: list[str] | None = None
        """Lines held back while `deferred` (None: each line is written as it comes)."""
        if self._lines > len(self._live) + COMPACT_AFTER:
            self._compact()

    def jobs(self) -> dict[str, Ports]:
        """Every live job's ports (a copy)."""
        return {job: dict(ports) for job, ports in self._live.items()}

    def get(self, job: str) -> Ports | None:
        found = self._live.get(job)
        return None if found is None else dict(found)

    def put(self, job: str, ports: Ports) -> None:
        """Keep `ports` as the job's (all of them: they replace what it had)."""
        self._append({"job": job, "ports": ports})
        self._live[job] = dict(ports)

    def drop(self, job: str) -> None:
        """The job ended: its ports are no longer kept."""
        if self._live.pop(job, None) is not None:
            self._append({"job": job, "ports": None})
        if job in self._legacy:
            self._legacy.discard(job)
            (self.directory / job).unlink(missing_ok=True)
        if self._lines - len(self._live) > max(COMPACT_AFTER, len(self._live)):
            self._compact()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Within: lines are held back (what `get` answers changes at once), then written
        in one `write` on leaving, even if the block raised. Nested: the outermost
        writes."""
        if self._held is not None:
            yield
            return
        self._held = []
        try:
            yield
        finally:
            held, self._held = self._held, None
            if held:
                self._write("".join(held))

    def _append(self, record: dict[str, object]) -> None:
        line = _ENCODE(record) + "\n"
        self._lines += 1
        if self._held is not None:
            self._held.append(line)
        else:
            self._write(line)

    def _write(self, text: str) -> None:
        if self._fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.directory / JOURNAL,
                               os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                # A crash tore the last line: end it, or this line would join it and be
                # skipped with it when read.
                os.write(self._fd, b"\n")
        data = text.encode()
        written = os.write(self._fd, data)
        if written != len(data):  # a short write (a full disk): the line ends torn
            raise OSError(f"cannot record ports in {self.directory / JOURNAL}: disk full?")

    def _compact(self) -> None:
        """Rewrite the journal with the live jobs' lines only (temp file + rename); lines
        held back are in it already (`_live` has them)."""
        if self._held is not None:
            self._held.clear()
        self.close()
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f"{JOURNAL}.{os.getpid()}.tmp"
        text = "".join(_ENCODE({"job": job, "ports": ports}) + "\n"
                       for job, ports in self._live.items())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.directory / JOURNAL)
        self._lines = len(self._live)


def read_directory(directory: Path) -> tuple[dict[str, Ports], set[str], int]:
    """The live jobs' ports in `directory` (the per-job files of earlier versions,
    `{"group/index": port}` or a bare port as `{"": port}`, then the journal's lines in
    order: they came after those files), the names of the per-job files (removed when
    their job ends), and how many lines the journal holds."""
    live: dict[str, Ports] = {}
    legacy: set[str] = set()
    with contextlib.suppress(FileNotFoundError):
        for path in directory.iterdir():
            if not path.name.startswith("."):
                legacy.add(path.name)
                found = _legacy_file(path)
                if found:
                    live[path.name] = found
    lines = 0
    try:
        text = (directory / JOURNAL).read_bytes()
    except FileNotFoundError:
        return live, legacy, lines
    for raw in text.split(b"\n"):
        if not raw:
            continue
        lines += 1
        try:
            record = json.loads(raw)
            job, ports = record["job"], record["ports"]
        except (ValueError, TypeError, KeyError):
            continue  # a line torn by a crash: as if it had not been written
        if not isinstance(job, str):
            continue
        if ports is None:
            live.pop(job, None)
        elif isinstance(ports, dict):
            live[job] = {str(k): v for k, v in ports.items() if isinstance(v, int)}
    return live, legacy, lines


def _legacy_file(path: Path) -> Ports:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if isinstance(data, int):
        return {"": data}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int)}
