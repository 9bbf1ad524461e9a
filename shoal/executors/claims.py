"""What claiming an attempt makes on disk, before its wrapper starts: the attempt's and its
logs' private directories, the working directory a task that switches user owns, and the
attempt's cgroups with its limits.

System calls only, on strings, and nothing of Shoal imported: the executor's launcher
(`wrapper.py --serve`, which may import nothing of Shoal) loads this file by its path and
does this work for each claim the executor sends it, off the server's GIL
(`shoal.executors.local_launch`); the executor's own launches without a launcher, its
relaunches, `isolation.task_work_dir` and `cgroups.TaskCgroups.create` call the same
functions.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence

CGROUP_PROCS = "cgroup.procs"
#: The CFS period: a task with a request of `c` millicores gets c/1000 of it per period.
CPU_PERIOD_US = 100_000
#: The kernel's smallest CFS quota.
MIN_CPU_QUOTA_US = 1_000
MIB = 1 << 20


class WorkDirError(ValueError):
    """A task's working directory cannot be made safely (a link, another user's): the
    executor reports it as `isolation.IsolationError`."""


# ---- the server's private directories -------------------------------------------------------

def private_dirs(root: str, path: str) -> None:
    """`path` and its parents up to `root` made if missing, 0700 (root itself included)."""
    # Strings, not `Path.parents`: this runs for every launch, a level's `in` test walked
    # every parent again.
    below = root if root.endswith(os.sep) else root + os.sep
    directory = path
    made = _made_dirs(directory)
    while True:
        # A level made here is 0700 already (every level is made so, not only the last):
        # only those found are looked at.
        if directory not in made and os.stat(directory).st_mode & 0o077:
            os.chmod(directory, 0o700)
        if directory == root or not directory.startswith(below):
            break
        directory = os.path.dirname(directory)


def _made_dirs(directory: str) -> set[str]:
    """Make `directory` and its missing parents, each 0700; the ones made now."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        if not os.path.isdir(directory):
            raise
        return set()
    except FileNotFoundError:
        parent = os.path.dirname(directory)
        if parent == directory:
            raise
        made = _made_dirs(parent)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # made meanwhile by another thread or process
            if not os.path.isdir(directory):
                raise
            return made
        return made | {directory}
    return {directory}


# ---- a task user's working directory --------------------------------------------------------

def owned_dirs(root: str, uid: int, gid: int, names: Sequence[str]) -> str:
    """`<root>/<names…>`, each directory owned by uid:gid and 0700, made without following
    a link at any step: the user owns them, and a link it planted must not let us create or
    chown anything elsewhere. Raises WorkDirError (or OSError) naming what is wrong."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name in names:
            child = _owned_child(fd, name, uid, gid)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return os.path.join(root, *names)


def _owned_child(parent: int, name: str, uid: int, gid: int) -> int:
    """Open (making it if missing) directory `name` in `parent`, owned by uid:gid, 0700;
    returns its descriptor."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent)
    try:
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        raise WorkDirError(f"working directory {name!r}: {exc.strerror} (a link is never "
                           f"followed)") from None
    try:
        info = os.fstat(child)
        if (info.st_uid, info.st_gid) != (uid, gid):
            if info.st_uid not in (os.geteuid(), uid):
                raise WorkDirError(f"working directory {name!r} belongs to uid {info.st_uid}")
            os.fchown(child, uid, gid)
        if stat.S_IMODE(info.st_mode) != 0o700:  # one made here is 0700 already
            os.fchmod(child, 0o700)
    except BaseException:
        os.close(child)
        raise
    return child


def check_dir(path: str | None) -> None:
    """A named working directory that does not exist is a failed start (exit code 127)."""
    if path and not os.path.isdir(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


# ---- an attempt's cgroups -------------------------------------------------------------------

def make_cgroups(paths: Sequence[str], *, v2: bool, memory: bool, cpu: bool,
                 memory_mib: int, cpu_millis: int) -> None:
    """Make an attempt's cgroups afresh with its limits (`cgroups.TaskCgroups.create`:
    `paths` its `paths`, memory's first; `memory`/`cpu`: whether that controller is used).
    Raises OSError when the kernel refuses, having removed what it made."""
    made: list[str] = []
    try:
        if v2:
            _make(paths[0])
            made.append(paths[0])
            if memory and memory_mib > 0:
                _write(f"{paths[0]}/memory.max", str(memory_mib * MIB))
                with contextlib.suppress(FileNotFoundError):
                    _write(f"{paths[0]}/memory.swap.max", "0")
            if cpu and cpu_millis > 0:
                _write(f"{paths[0]}/cpu.max", f"{quota(cpu_millis)} {CPU_PERIOD_US}")
            return
        if memory:
            _make(paths[0])
            made.append(paths[0])
            if memory_mib > 0:
                size = str(memory_mib * MIB)
                _write(f"{paths[0]}/memory.limit_in_bytes", size)
                # memsw ≥ memory is the kernel's rule: set after it, same value ⇒ no swap.
                with contextlib.suppress(FileNotFoundError):
                    _write(f"{paths[0]}/memory.memsw.limit_in_bytes", size)
        if cpu:
            made_now = _make(paths[-1])
            made.append(paths[-1])
            if cpu_millis > 0:
                # A cgroup made now has the kernel's period, which is CPU_PERIOD_US: not
                # written again (each write ~30 µs of the launch's CPU).
                if not made_now:
                    _write(f"{paths[-1]}/cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(f"{paths[-1]}/cpu.cfs_quota_us", str(quota(cpu_millis)))
    except OSError:
        for cgroup in made:
            with contextlib.suppress(OSError):
                os.rmdir(cgroup)
        raise


def quota(cpu_millis: int) -> int:
    return max(MIN_CPU_QUOTA_US, cpu_millis * CPU_PERIOD_US // 1000)


def _make(path: str) -> bool:
    """Make an empty cgroup at `path`; whether it was made now. One left by an earlier
    start of the same attempt (its executor died between making it and starting the task)
    is reused once empty."""
    try:
        os.mkdir(path)
    except FileExistsError:
        with open(f"{path}/{CGROUP_PROCS}", encoding="ascii") as procs:
            if procs.read().split():
                raise OSError(errno.EBUSY, f"cgroup {path} still holds processes") from None
        return False
    return True


def _write(path: str, value: str) -> None:
    # On the descriptor: a text file object would also ask whether it is a terminal and
    # where it stands, system calls each launch paid for nothing.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)
