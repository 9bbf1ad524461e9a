"""What the local executor keeps per job on disk beside its attempts' records: the paths of
an attempt's directory and of a task's logs, job files (`Executor.job_file`), logs read from
an offset, and what a forgotten job leaves; with `Isolation`, how tasks are kept apart, which
decides where job files live. A base class of `LocalExecutor` (`shoal.executors.local`),
which supplies the root, the isolation and the accounts of task users.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from shoal.executors.cgroups import TaskCgroups
from shoal.executors.contract import MAX_LOG_READ, LogChunk, LogStream
from shoal.executors.isolation import Accounts, Mode, Policy
from shoal.executors.processes import replace_file

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, slots=True)
class Isolation:
    """How the executor keeps tasks apart (`shoal.executors.isolation` states the contract).
    The default runs tasks as the executor's own user without limits: what tests that drive
    the executor directly use; `shoal up` decides the real one at start."""

    policy: Policy = field(default_factory=lambda: Policy(Mode.SAME_USER))
    work_root: Path | None = None
    """Where tasks that switch user get their working directories (required then)."""
    cgroups: TaskCgroups | None = None
    """Where task cgroups are made; None: no limits, no cgroup tracking."""


def job_file_paths(root: Path, work_root: Path | None, kind: str, job: str) -> list[Path]:
    """Every place a job file of `kind` may be (`LocalExecutor.job_file`'s two)."""
    check_name("job", job)
    check_name("kind", kind)
    paths = [root / "control" / kind / f"{job}.json"]
    if work_root is not None:
        paths.append(work_root / ".jobs" / job / f"{kind}.json")
    return paths


def check_name(what: str, value: str) -> None:
    # Job and group names become path components: refuse anything that could escape `root`.
    if not _NAME.match(value) or value in (".", ".."):
        raise ValueError(f"{what} {value!r} must match {_NAME.pattern} to be used in paths")


class JobFiles:
    """`LocalExecutor` supplies the root, the isolation and the task users' accounts."""

    root: Path
    isolation: Isolation
    _accounts: Accounts

    # ---- paths ------------------------------------------------------------------------------

    # One join of a relative path each, not one per level: every launch asks for these
    # twice or more, and each `/` parses its part again (pathlib splits a part on `/` as
    # it would split the levels: the same path either way).
    def task_dir(self, job: str, group: str, index: int, attempt: int) -> Path:
        return self.root / f"tasks/{job}/{group}-{index}/attempt-{attempt}"

    def log_paths(self, job: str, group: str, index: int) -> tuple[Path, Path]:
        base = f"logs/{job}/{group}-{index}"
        return self.root / f"{base}.out", self.root / f"{base}.err"

    def job_file(self, kind: str, job: str, user: str | None) -> Path:
        """Where the control plane keeps a file that every task of `job` (of Shoal user
        `user`) reads and no other tenant's may: its membership file, for one. Running as
        the server's user: `<root>/control/<kind>/<job>.json`. Switching users:
        `<work root>/.jobs/<job>/<kind>.json`, in a directory of the server's (so a task
        can plant no link there) that only the job's OS group may enter (0750); the file
        must then be readable by others (0644): its directory is the gate. Only says
        where: the directory is made by the first `write_job_file` (every task is told
        the path at launch, and most jobs' file is never written — a burst's launches
        made a directory each for nothing)."""
        return self._job_file(kind, job, user)[0]

    def _job_file(self, kind: str, job: str, user: str | None) -> tuple[Path, int | None]:
        """`job_file`'s path, and the OS group its directory is for (None: the server's
        own directory under `root`)."""
        check_name("job", job)  # no `/` in it: one join is the path, level by level
        work_root = self.isolation.work_root
        if work_root is None or not self.isolation.policy.switches_user:
            return self.root / f"control/{kind}/{job}.json", None
        try:
            identity = self._accounts.identity(user)
        except ValueError:  # its tasks cannot run either: nothing will read the file
            return self.root / f"control/{kind}/{job}.json", None
        assert identity is not None
        return work_root / f".jobs/{job}/{kind}.json", identity.gid

    def write_job_file(self, kind: str, job: str, user: str | None, data: bytes) -> Path:
        """Replace the job file's content (`job_file`), atomically; returns its path."""
        path, gid = self._job_file(kind, job, user)
        if gid is None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            jobs = path.parent.parent
            jobs.mkdir(mode=0o711, exist_ok=True)
            jobs.chmod(0o711)  # `shoal up`'s umask (0o077) would leave it closed to the tasks
            directory = path.parent
            directory.mkdir(mode=0o750, exist_ok=True)
            os.chown(directory, os.geteuid(), gid, follow_symlinks=False)
            directory.chmod(0o750)
        replace_file(path, data)
        return path

    def remove_job_file(self, kind: str, job: str) -> None:
        """Remove the job file, wherever `job_file` put it (its user is not needed)."""
        for path in job_file_paths(self.root, self.isolation.work_root, kind, job):
            path.unlink(missing_ok=True)

    def read_log(self, job: str, group: str, index: int, stream: LogStream, offset: int,
                 limit: int) -> LogChunk:
        """At most `limit` (and `MAX_LOG_READ`) bytes of a task's stdout or stderr from
        `offset`; empty while the file does not exist."""
        out, err = self.log_paths(job, group, index)
        path = out if stream == "stdout" else err
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                return LogChunk(handle.read(max(0, min(limit, MAX_LOG_READ))), offset)
        except FileNotFoundError:
            return LogChunk(b"", offset)

    def rename_job(self, job: str, new: str) -> None:
        """Move what the executor keeps of an ended job to the name `new` (the job was kept
        in history under it): its records, logs and working directories. A job named `job`
        then starts from scratch, and the old one's logs read under `new`."""
        check_name("job", job)
        check_name("job", new)
        bases = [self.root / "tasks" / job, self.root / "logs" / job]
        if self.isolation.work_root is not None:
            bases += [*self.isolation.work_root.glob(f"*/{job}"),
                      self.isolation.work_root / ".jobs" / job]
        for base in bases:
            if not base.exists():
                continue
            target = base.with_name(new)
            shutil.rmtree(target, ignore_errors=True)  # left by a job forgotten in part
            base.rename(target)

    def forget_job(self, job: str) -> None:
        """Remove what the executor keeps of a job that was deleted (it runs nothing): its
        attempts' records and its logs, and its tasks' working directories. A job of the
        same name submitted later starts from attempt 1 again, which must not find the old
        one's claim and status."""
        check_name("job", job)
        bases = [self.root / "tasks" / job, self.root / "logs" / job]
        if self.isolation.work_root is not None:
            # rmtree never follows a link a task planted in its own directory.
            bases += [*self.isolation.work_root.glob(f"*/{job}"),
                      self.isolation.work_root / ".jobs" / job]
        for base in bases:
            shutil.rmtree(base, ignore_errors=True)
