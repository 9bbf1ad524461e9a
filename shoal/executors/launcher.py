"""The launcher: one long-lived wrapper process per local executor that forks a task's
wrapper on request, instead of starting a fresh Python interpreter per task.

A wrapper started as `python -I wrapper.py …` costs ~50 ms of CPU and ~100 ms before the
user's command runs, most of it the interpreter starting and importing. The launcher is
`python -I wrapper.py --serve` (`wrapper.serve`), started once, having imported the
wrapper already: per request it forks a child that becomes the task's wrapper — its own
session, the task's logs as stdout and stderr, then exactly `wrapper.run_task`, the code a
wrapper started by path runs — and answers the child's pid and start time. So every
guarantee of the wrapper holds as it is: the exclusive pid record (of two wrappers of one
attempt, only the first runs the command), the outcome written atomically to status.json,
isolation applied to the command only (uid/gid, cgroups, umask between fork and exec of the
command), and adoption after a restart from pid.json and status.json.

Where this machine has a C compiler, the launcher spawns the compiled wrapper instead
(`shoal.executors.native`, `wrapper.c`: the same records, field for field) with
`posix_spawn`, which copies nothing of the launcher: ~3 ms of CPU per task instead of ~8
on a loaded 2-core machine. A request it cannot spawn is forked as above.

The local executor sends its launches whole (`shoal.executors.local_launch`): the launcher
first claims the attempt (its private directories, the exclusive `launch.json`, its user's
working directory, its cgroups: `shoal.executors.claims`, loaded by path), then starts its
wrapper; an attempt found claimed is answered so, and the executor decides as it did.

The forked wrappers are detached (`setsid`): they outlive the launcher, the executor and
the server. The launcher lives as long as the executor's end of its pipe: when the server
dies, it reads the end of its input and exits, and what it forked runs on, to be adopted.
A launcher that died is started again on the next request; a request whose answer never
came is sent again to the new one, and the attempt's pid record (not the answer) then says
which process runs it, since a second wrapper of one attempt never runs the command.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from shoal.executors.native import compiled_wrapper

WRAPPER = Path(__file__).with_name("wrapper.py")
#: At most this many requests are sent before their answers are read: the answers (~60
#: bytes each) then always fit the pipe's buffer, so the launcher never blocks writing one
#: while the executor is still writing requests.
BATCH = 256


class LaunchError(OSError):
    """The launcher could not start the task's wrapper (a fork refused, a launcher that
    cannot be started): nothing runs."""


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """One task's wrapper to fork: what `python -I wrapper.py` got as its arguments,
    environment, working directory and descriptors."""

    task_dir: Path
    command: Sequence[str]
    env: Mapping[str, str]
    cwd: str | None
    stdout: Path
    stderr: Path
    uid: int | None = None
    gid: int | None = None
    cgroups: Sequence[Path] = ()

    def line(self) -> bytes:
        return json.dumps({
            "task_dir": str(self.task_dir), "command": list(self.command),
            "env": dict(self.env), "cwd": self.cwd, "stdout": str(self.stdout),
            "stderr": str(self.stderr), "uid": self.uid, "gid": self.gid,
            "cgroups": [str(c) for c in self.cgroups]}).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class Forked:
    """The wrapper the launcher forked."""

    pid: int
    start_time: float
    resent: bool
    """The request was sent again to a new launcher: two wrappers of the attempt may have
    been forked, and its pid record says which one runs it."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The launcher's answer to one request."""

    reply: dict[str, Any] | None
    """None: no answer came, from two launchers (both died): what became of the request is
    unknown, and only the attempt's records can say."""
    resent: bool
    """The request was sent again to a new launcher (`Forked.resent`)."""


def forked(answer: Answer) -> Forked | LaunchError:
    """The wrapper an answer says was started, or why none was."""
    reply = answer.reply
    if reply is None:
        return LaunchError("the launcher died twice while starting the task's wrapper")
    if "error" in reply:
        return LaunchError(f"cannot start the task's wrapper: {reply['error']}")
    return Forked(int(reply["pid"]), float(reply["start_time"]), answer.resent)


class Launcher:
    """The executor's side of its launcher process (started on the first request). Safe to
    call from several threads: requests are answered one at a time, in order."""

    def __init__(self, *, compiled: bool = True) -> None:
        """`compiled`: the launcher spawns the compiled wrapper where this machine can
        build it (`shoal.executors.native`); False, or where it cannot, it forks the
        Python wrapper."""
        self._compiled = compiled
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.starts = 0
        """How many launcher processes were started (one, unless one died)."""
        self.native: Path | None = None
        """The compiled wrapper the running launcher spawns (None: it forks Python)."""

    @property
    def pid(self) -> int | None:
        """The launcher process's pid, while one runs."""
        process = self._process
        return None if process is None or process.poll() is not None else process.pid

    def fork(self, request: LaunchRequest) -> Forked:
        """Have the launcher fork `request`'s wrapper; its pid and start time."""
        forked = self.fork_many([request])[0]
        if isinstance(forked, LaunchError):
            raise forked
        return forked

    def fork_many(self, requests: Sequence[LaunchRequest]) -> list[Forked | LaunchError]:
        """Have the launcher fork each request's wrapper; one answer per request, in order.
        The requests are sent together, BATCH at a time, and answered together: one
        exchange with the launcher, not one per task. A launcher that died part-way is
        started again and sent the requests it left unanswered (`Forked.resent`)."""
        return [forked(answer) for answer in self.ask_many([r.line() for r in requests])]

    def ask_many(self, lines: Sequence[bytes]) -> list[Answer]:
        """Send these requests (JSON lines: `LaunchRequest.line`, or the claims of
        `shoal.executors.local_launch`) and read their answers, in order, as `fork_many`
        does."""
        answers: list[Answer] = []
        with self._lock:
            for first in range(0, len(lines), BATCH):
                answers += self._ask_batch(list(lines[first:first + BATCH]))
        return answers

    def _ask_batch(self, lines: list[bytes]) -> list[Answer]:
        answers = self._ask(lines)
        resent = [i for i, answer in enumerate(answers) if answer is None]
        if resent:
            self._discard()  # it died: a new one serves those requests again
            for i, answer in zip(resent, self._ask([lines[i] for i in resent]), strict=True):
                answers[i] = answer
            if any(answers[i] is None for i in resent):
                self._discard()
        again = set(resent)
        return [Answer(answer, i in again) for i, answer in enumerate(answers)]

    def close(self) -> None:
        """End the launcher (the wrappers it forked run on)."""
        with self._lock:
            self._discard()

    def _ask(self, lines: list[bytes]) -> list[dict[str, Any] | None]:
        """Send these requests and read their answers, in order; None for each request
        left unanswered because the launcher died meanwhile."""
        answers: list[dict[str, Any] | None] = [None] * len(lines)
        process = self._running()
        stdin, stdout = _pipes(process)
        try:
            stdin.write(b"".join(lines))
            stdin.flush()
        except OSError:  # BrokenPipeError: it died; what it answered before is still read
            pass
        for i in range(len(lines)):
            try:
                reply = stdout.readline()
            except OSError:
                return answers
            if not reply:
                return answers
            answer = json.loads(reply)
            answers[i] = answer if isinstance(answer, dict) else None
        return answers

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._discard()
            self.native = compiled_wrapper() if self._compiled else None
            native = [] if self.native is None else ["--native", str(self.native)]
            try:
                # In its own session: a signal meant for the server's terminal is not its.
                self._process = subprocess.Popen(
                    [sys.executable, "-I", str(WRAPPER), "--serve", *native],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/",
                    start_new_session=True)
            except OSError as exc:
                raise LaunchError(f"cannot start the launcher: {exc}") from exc
            self.starts += 1
        return self._process

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        stdin, stdout = _pipes(process)
        with contextlib.suppress(OSError):  # BrokenPipeError: it died with a request unread
            stdin.close()  # the end of its input ends it
        stdout.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert process.stdin is not None and process.stdout is not None
    return process.stdin, process.stdout
