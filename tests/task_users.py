"""Helpers for tests whose `shoal up` runs tasks as unprivileged OS users (it does as root,
which CI is): what such a task can reach.

pytest's temporary directories are the test's own (0700 under /tmp/pytest-of-root), so a
task user can neither traverse nor write them; the interpreter running the tests may live
under a 0700 home too. `Scratch` is a directory tasks can reach: `work` for `--work-dir`
and `shared`, where they may write what a test reads (counters, go-files).
"""

from __future__ import annotations

import shutil
import stat
import sys
import tempfile
from pathlib import Path


def reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can traverse to `path` and execute it."""
    path = path.resolve()
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def task_python() -> str:
    """A Python interpreter that a task running as another OS user can start: the tests'
    own when every directory on its way lets others through, else the system's."""
    for candidate in (sys.executable, shutil.which("python3", path="/usr/local/bin:/usr/bin")):
        if candidate and reachable_by_others(Path(candidate)):
            return candidate
    raise AssertionError("no Python interpreter that another OS user can run: "
                         f"{sys.executable} is not reachable and there is no python3 in /usr")


class Scratch:
    """A fresh directory under /tmp that every user can traverse (0711), removed by
    `close`: `work` (made by `shoal up --work-dir`) and `shared` (0777: tasks of any user
    write there)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="shoal-test-", dir="/tmp"))
        self.root.chmod(0o711)
        self.work = self.root / "work"
        self.shared = self.root / "shared"
        self.shared.mkdir()
        self.shared.chmod(0o777)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
