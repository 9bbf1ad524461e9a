"""cgroups for tasks: a task's CPU and memory requests become its limits, and its whole
process tree is tracked by the kernel.

This module owns finding a writable cgroup hierarchy at start (`detect`), making one cgroup
per task attempt with its limits (`TaskCgroups.create`), and what is done with a task's
cgroups afterwards: signal everything in them (a process that double-forks or calls
`setsid` leaves the task's process group, never its cgroup) and remove them once they are
empty (the primitives live in `wrapper.py`, which must import nothing of Shoal).

Both layouts are supported:

- cgroup v2 where the `memory` and/or `cpu` controllers are available to our own cgroup:
  `memory.max` (and `memory.swap.max` 0), `cpu.max`, `memory.events`' `oom_kill`. The
  controllers must be enabled in our cgroup's `cgroup.subtree_control`, which the kernel
  refuses while our cgroup holds processes: `shoal up` then moves itself into a leaf of its
  own (`shoal-server-<tag>`), as programs given a delegated cgroup do.
- cgroup v1, per controller (hybrid machines mount cgroup2 without controllers beside v1):
  `memory.limit_in_bytes` (+ `memory.memsw.limit_in_bytes`, so no swap), `cpu.cfs_quota_us`
  over `cpu.cfs_period_us`, `memory.oom_control`'s `oom_kill` counter.

Task cgroups live under `<our cgroup>/shoal-<tag>/task-<hash>`, `tag` naming the executor
(two `shoal up` on one machine never share one), in every hierarchy used. A request of 0
(no CPU or no memory asked for) sets no limit in that dimension.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from shoal.executors.claims import _write as claims_write
from shoal.executors.claims import make_cgroups
from shoal.executors.wrapper import CGROUP_PROCS


class CgroupVersion(StrEnum):
    V1 = "v1"
    V2 = "v2"


@dataclass(frozen=True, slots=True)
class TaskLimits:
    """What a task asked for, which becomes what it may use."""

    cpu_millis: int = 0
    """Millicores; 0: no CPU limit."""
    memory_mib: int = 0
    """MiB; 0: no memory limit."""


@dataclass(frozen=True, slots=True)
class TaskCgroups:
    """Where this executor makes its tasks' cgroups: the parent in each hierarchy used."""

    version: CgroupVersion
    memory_parent: Path | None
    cpu_parent: Path | None
    """v2: the same directory as `memory_parent` (one hierarchy), or None without `cpu`."""

    def describe(self) -> str:
        limits = [name for name, parent in (("memory", self.memory_parent),
                                            ("cpu", self.cpu_parent)) if parent is not None]
        parents = sorted({str(p) for p in (self.memory_parent, self.cpu_parent) if p})
        return (f"cgroup {self.version}: tasks get {' and '.join(limits)} limits from their "
                f"requests, under {', '.join(parents)}")

    def release(self) -> None:
        """Remove the parents if no task cgroup is left in them (the server stops; tasks
        still running keep theirs, and the next start adopts them)."""
        for parent in {self.memory_parent, self.cpu_parent} - {None}:
            assert parent is not None
            with contextlib.suppress(OSError):
                parent.rmdir()

    def paths(self, key: str) -> tuple[Path, ...]:
        """The cgroups of the task attempt named by `key` (its task directory): one per
        hierarchy used, memory's first."""
        return tuple(Path(leaf) for leaf in self.leaves(key))

    def leaves(self, key: str) -> tuple[str, ...]:
        """`paths(key)` as strings (what a launch sends its launcher)."""
        leaf = "task-" + hashlib.sha256(key.encode()).hexdigest()[:20]
        parents = (self.memory_parent or self.cpu_parent,) \
            if self.version is CgroupVersion.V2 else (self.memory_parent, self.cpu_parent)
        return tuple(f"{parent}/{leaf}" for parent in parents if parent is not None)

    def create(self, key: str, limits: TaskLimits) -> tuple[Path, ...]:
        """Make the cgroups of one task attempt (`paths(key)`) afresh with `limits`.
        Raises OSError when the kernel refuses (`claims.make_cgroups`, which the
        executor's launcher runs for the attempts it claims)."""
        paths = self.paths(key)
        make_cgroups([str(p) for p in paths], v2=self.version is CgroupVersion.V2,
                     memory=self.memory_parent is not None, cpu=self.cpu_parent is not None,
                     memory_mib=limits.memory_mib, cpu_millis=limits.cpu_millis)
        return paths

    def spec(self, limits: TaskLimits) -> dict[str, bool | int]:
        """`claims.make_cgroups`' keyword arguments for an attempt with `limits`."""
        return {"v2": self.version is CgroupVersion.V2,
                "memory": self.memory_parent is not None, "cpu": self.cpu_parent is not None,
                "memory_mib": limits.memory_mib, "cpu_millis": limits.cpu_millis}


def _write(path: Path, value: str) -> None:
    claims_write(str(path), value)


# ---- detection ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mount:
    root: str
    """The cgroup path the mount shows at its top (not "/" inside a cgroup namespace)."""
    point: Path
    v2: bool
    controllers: frozenset[str]


def _mounts(mountinfo: str) -> list[_Mount]:
    out: list[_Mount] = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        out.append(_Mount(fields[3], point, tail[0] == "cgroup2",
                          frozenset(tail[2].split(","))))
    return out


def _memberships(proc_cgroup: str) -> dict[str, str]:
    """Controller (v1) or "" (v2) → our cgroup's path in that hierarchy."""
    out: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def _inside(mount: _Mount, path: str) -> Path | None:
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None  # our cgroup is not visible through this mount
    return mount.point / path[len(root):].lstrip("/")


@dataclass(frozen=True, slots=True)
class Unavailable:
    """No hierarchy could be written: why, said once at start."""

    reason: str


def detect(tag: str, *, mountinfo: str | None = None, proc_cgroup: str | None = None
           ) -> TaskCgroups | Unavailable:
    """The hierarchies this process may make task cgroups in, preferring v2 with controllers
    and else v1; `tag` names the executor's parent cgroup. `mountinfo` and `proc_cgroup`
    (this process's /proc/self files by default) are for tests."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8")
    if proc_cgroup is None:
        proc_cgroup = Path("/proc/self/cgroup").read_text(encoding="utf-8")
    mounts, member = _mounts(mountinfo), _memberships(proc_cgroup)
    reasons: list[str] = []
    v2 = next((m for m in mounts if m.v2), None)
    if v2 is not None and "" in member:
        found = _v2(v2, member[""], tag, reasons)
        if found is not None:
            return found
    memory = _v1(mounts, member, "memory", tag, reasons)
    cpu = _v1(mounts, member, "cpu", tag, reasons)
    if memory is not None or cpu is not None:
        return TaskCgroups(CgroupVersion.V1, memory, cpu)
    return Unavailable("; ".join(reasons) or "no cgroup hierarchy is mounted")


def _v1(mounts: list[_Mount], member: dict[str, str], controller: str, tag: str,
        reasons: list[str]) -> Path | None:
    mount = next((m for m in mounts if not m.v2 and controller in m.controllers), None)
    if mount is None or controller not in member:
        reasons.append(f"no cgroup v1 {controller} hierarchy")
        return None
    own = _inside(mount, member[controller])
    if own is None:
        reasons.append(f"our {controller} cgroup is not under {mount.point}")
        return None
    parent = own / f"shoal-{tag}"
    try:
        parent.mkdir(exist_ok=True)
    except OSError as exc:
        reasons.append(f"cannot create {parent}: {exc.strerror}")
        return None
    return parent


def _v2(mount: _Mount, path: str, tag: str, reasons: list[str]) -> TaskCgroups | None:
    own = _inside(mount, path)
    if own is None:
        reasons.append(f"our cgroup is not under {mount.point}")
        return None
    try:
        available = set((own / "cgroup.controllers").read_text(encoding="ascii").split())
    except OSError as exc:
        reasons.append(f"cannot read {own / 'cgroup.controllers'}: {exc.strerror}")
        return None
    wanted = sorted({"memory", "cpu"} & available)
    if not wanted:
        reasons.append(f"cgroup v2 at {own} offers neither memory nor cpu")
        return None
    enable = " ".join(f"+{c}" for c in wanted)
    parent = own / f"shoal-{tag}"
    try:
        _enable(own, enable, tag)
        parent.mkdir(exist_ok=True)
        _write(parent / "cgroup.subtree_control", enable)
    except OSError as exc:
        reasons.append(f"cannot delegate {enable} under {own}: {exc.strerror}")
        return None
    return TaskCgroups(CgroupVersion.V2, parent if "memory" in wanted else None,
                       parent if "cpu" in wanted else None)


def _enable(own: Path, enable: str, tag: str) -> None:
    """Enable controllers for our cgroup's children. The kernel refuses (EBUSY) while our
    cgroup holds processes ("no internal processes"): then this process moves into a leaf
    of its own and tries again."""
    try:
        _write(own / "cgroup.subtree_control", enable)
        return
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
    leaf = own / f"shoal-server-{tag}"
    leaf.mkdir(exist_ok=True)
    _write(leaf / CGROUP_PROCS, str(os.getpid()))
    _write(own / "cgroup.subtree_control", enable)
