"""Tenant isolation of tasks: the contract every executor meets, and how the local one does.

The contract (the local executor's, and the Ray engine's on every node: see "On Ray" below):

1. **A task never runs as the control plane's user.** It runs as an unprivileged OS user:
   by default one per Shoal user, `<prefix><name>` (`shoal-alice` for alice), created on
   demand; or one dedicated task user for every task (`--task-user`). Only an operator's
   explicit `--insecure-same-user` runs tasks as the server's own user (then tasks can read
   the store and the admin token: single-tenant use only).
2. **Nothing of the control plane is reachable from a task.** The data directory (store,
   tokens, task records, logs) is 0700, its files 0600; a task's wrapper stays the server's
   user, so a task can neither forge its outcome nor signal its wrapper. Logs are opened by
   the server and handed to the task as descriptors: the API serves them, with its auth.
3. **A task works in a directory its user owns** (0700), outside the data directory:
   `<work root>/<os user>/<job>/<group>-<index>`, also its HOME, with a umask of 0o077. A
   job spec's own `workingDir` is honoured as is: the task then has its user's rights
   there. Its environment is the job's, Shoal's variables, and only a few of the server's
   (PATH, locale, time zone, library paths: `BASE_ENV`), never the server's secrets.
4. **A job's credentials reach only that job's tasks.** SHOAL_TOKEN is in the task's
   environment; `/proc/<pid>/environ` is readable by its own user only, so with one OS user
   per Shoal user no other tenant's task can read it (the same Shoal user's other tasks can:
   they are that user already). With one shared `--task-user`, every
   task runs as the same user and can read the others' environments and files: use it
   only where the tenants trust each other.
5. **Where the kernel lets us, a task's requests are its limits** (`shoal.executors.
   cgroups`): its memory request is the most memory it may use (above it the OOM killer
   ends it and the task records `OOMKilled`), its CPU request is its CPU quota, and its
   whole process tree is in its cgroup, so stopping it kills everything it started. Where
   no cgroup hierarchy is writable, `shoal up` says so once at start and runs without.

An OS account is Shoal's only when its comment (GECOS) says so (`ACCOUNT_COMMENT`): an
existing account of the same name that Shoal did not create is never used.

**On Ray** (`shoal.executors.ray_engine`) every attempt runs through a local executor on its
node, inside a Ray worker, with the isolation `shoal up` decided (policy, work root, cgroups):
the same code as on one machine, so the contract holds on every node when Ray's workers can
do what `shoal up` does as root. Hence the deployments:

- **Ray started as root on every node** (the supported one): the worker creates the task's
  OS user on its node and its wrapper switches to it, as the local executor does; the
  node's records and logs (`<root>/nodes/<node>`, the engine's root and `nodes/` included)
  are root's, 0700. The work root must be the same path on every node, passable by the task
  users. A node lacking the parent cgroups `shoal up` made on its own machine makes its own
  under the same tag (or, with no writable hierarchy, runs without limits and logs it).
  `tests/executors/test_executor_isolation.py` checks this on a real Ray cluster started as
  root: the task's OS user, none of the node's environment, the control plane's files and
  another tenant's token and job file unreadable, cgroup limits and what a stop kills.
- **Ray started as an unprivileged user U** (say `ray-tasks`): its workers cannot switch
  users, so every task runs as U — U is the one task user, and `shoal up` must say so with
  `--insecure-same-user` (a `--task-user` or per-user policy asks the node for a switch it
  cannot make: every launch fails, with the reason). The trade-off is `--task-user`'s and
  more: tasks of every tenant share U, so they read each other's files, environments (job
  tokens) and logs, and, since the node's records are U's too, a task could forge its own
  outcome or signal its wrapper. The control plane stays out of their reach only when its
  data directory is not U's: run `shoal up` as another user on a machine that is not a Ray
  node (on each node, create `<root>` owned by U, 0700). Use it only where the tenants
  trust each other. It is documented, not tested: a test would need Ray, Shoal and their
  Python installed where an unprivileged user can run them, which this project's test
  machines (an interpreter under root's 0700 home) do not offer.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import os
import pwd
import re
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from shoal.api.defaults import TASK_USER_PREFIX
from shoal.executors.claims import WorkDirError, owned_dirs

#: The comment every account Shoal creates carries; nothing else is taken for Shoal's.
ACCOUNT_COMMENT = "shoal task user"
#: Linux's (shadow-utils') longest user name.
MAX_USER_NAME = 32
_VALID = re.compile(r"^[a-z_][a-z0-9_-]*$")
#: The server's variables a task inherits; everything else it gets from its job's spec.
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "CUDA_HOME",
            "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_VISIBLE_DEVICES")
_BASE_PREFIXES = ("LC_",)


class IsolationError(ValueError):
    """A task cannot run isolated as asked (no OS user for it, an account that is not
    Shoal's, a server that is not root): the message says why."""


class Mode(StrEnum):
    PER_USER = "per-user"
    """One OS user per Shoal user, `<prefix><name>`."""
    TASK_USER = "task-user"
    """One dedicated OS user for every task."""
    SAME_USER = "same-user"
    """Tasks run as the server's own user (`--insecure-same-user`)."""
    REFUSED = "refused"
    """The server cannot switch users (it is not root) and was not told to run tasks as
    itself: every launch is refused, with `Policy.reason`."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Who tasks run as, decided once at start."""

    mode: Mode
    prefix: str = TASK_USER_PREFIX
    task_user: str | None = None
    reason: str = ""
    """Why: for REFUSED, the message every launch fails with; otherwise what start says."""

    @property
    def switches_user(self) -> bool:
        return self.mode in (Mode.PER_USER, Mode.TASK_USER)


def decide(euid: int, *, insecure_same_user: bool, task_user: str | None,
           prefix: str = TASK_USER_PREFIX) -> Policy:
    """The policy for a server running with effective uid `euid` and these flags."""
    if task_user is not None and insecure_same_user:
        raise IsolationError("--task-user and --insecure-same-user exclude each other")
    if not _VALID.match(prefix) or len(prefix) > MAX_USER_NAME - 10:
        raise IsolationError(f"--task-user-prefix {prefix!r}: a user name prefix must match "
                             f"{_VALID.pattern} and be at most {MAX_USER_NAME - 10} characters")
    if task_user is not None and (not _VALID.match(task_user)
                                  or len(task_user) > MAX_USER_NAME or task_user == "root"):
        raise IsolationError(f"--task-user {task_user!r} is not an unprivileged user name")
    if insecure_same_user:
        who = "root" if euid == 0 else f"uid {euid}"
        return Policy(Mode.SAME_USER, prefix, reason=(
            f"INSECURE: tasks run as this server's own user ({who}) and can read its store "
            f"and admin token (--insecure-same-user)"))
    if euid != 0:
        return Policy(Mode.REFUSED, prefix, task_user, reason=(
            f"shoal up runs as uid {euid}, not root, so it cannot run tasks as another OS "
            f"user; tasks are refused: a task running as the server's user could read its "
            f"store and tokens. Restart it as root, or with --insecure-same-user if every "
            f"user of this server is trusted"))
    if task_user is not None:
        return Policy(Mode.TASK_USER, prefix, task_user, reason=(
            f"tasks run as OS user {task_user!r}, all of them: tasks of different users can "
            f"read each other's files and environments"))
    return Policy(Mode.PER_USER, prefix, reason=(
        f"tasks run as one OS user per Shoal user ({prefix}<name>, created on demand)"))


def os_user_name(prefix: str, shoal_user: str) -> str:
    """The OS user of a Shoal user: `<prefix><name>` when that is a valid Linux user name of
    at most 32 characters; otherwise a sanitised, shortened name plus a hash of the exact
    name, so that two Shoal users never share an account ("Alice" is not "alice")."""
    plain = prefix + shoal_user
    if _VALID.match(plain) and len(plain) <= MAX_USER_NAME:
        return plain
    digest = hashlib.sha256(shoal_user.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", shoal_user.lower()).strip("-")
    room = MAX_USER_NAME - len(prefix) - len(digest) - 1
    return f"{prefix}{cleaned[:room]}-{digest}" if cleaned[:room] else f"{prefix}{digest}"


@dataclass(frozen=True, slots=True)
class Identity:
    """The OS user a task runs as."""

    name: str
    uid: int
    gid: int


class Accounts:
    """The OS users of one server's tasks: looked up, or created on demand, and cached."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._known: dict[str, Identity] = {}

    def identity(self, shoal_user: str | None) -> Identity | None:
        """Who a task of `shoal_user` runs as; None: the server's own user (SAME_USER).
        Raises IsolationError when it must not run at all."""
        mode = self.policy.mode
        if mode is Mode.SAME_USER:
            return None
        if mode is Mode.REFUSED:
            raise IsolationError(self.policy.reason)
        if mode is Mode.TASK_USER:
            assert self.policy.task_user is not None
            return self._account(self.policy.task_user, dedicated=True)
        if not shoal_user:
            raise IsolationError("the job has no user, so there is no OS user to run it as")
        return self._account(os_user_name(self.policy.prefix, shoal_user), dedicated=False)

    def _account(self, name: str, *, dedicated: bool) -> Identity:
        known = self._known.get(name)
        if known is not None:
            return known
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            entry = _create(name)
        if entry.pw_uid == 0 or entry.pw_gid == 0:
            raise IsolationError(f"OS user {name!r} has uid or gid 0: tasks never run as root")
        if not dedicated and not entry.pw_gecos.startswith(ACCOUNT_COMMENT):
            # Someone else's account that happens to have the name: never run tasks as it.
            raise IsolationError(f"OS user {name!r} exists and was not created by Shoal; "
                                 f"choose another --task-user-prefix")
        identity = Identity(name, entry.pw_uid, entry.pw_gid)
        self._known[name] = identity
        return identity


def _create(name: str) -> pwd.struct_passwd:
    """A system account with a group of its own, no home and no login shell."""
    done = subprocess.run(
        ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", "--comment", ACCOUNT_COMMENT, name],
        capture_output=True, text=True, check=False, timeout=60)
    try:
        # Created, or created meanwhile by another server (useradd then exits 9).
        return pwd.getpwnam(name)
    except KeyError:
        raise IsolationError(f"cannot create OS user {name!r}: "
                             f"{done.stderr.strip()[:300] or f'useradd exited {done.returncode}'}"
                             ) from None


# ---- working directories --------------------------------------------------------------------


def check_work_root(root: Path) -> Path:
    """Make the root of the tasks' working directories (owned by us, 0711: tasks reach their
    own directory through it, list nobody's) and check that every directory above it lets
    other users through; returns it absolute. Raises IsolationError naming what is wrong."""
    root = root.absolute()
    # What is made here is made passable (0711) whatever the umask: a private parent
    # (`shoal up` runs under 0o077) would lock every task out of its directory.
    for directory in reversed([p for p in (root, *root.parents) if not p.exists()]):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o711)
            directory.chmod(0o711)
    info = root.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) \
            or info.st_uid != os.geteuid():
        raise IsolationError(f"--work-dir {root} must be a directory owned by this server's "
                             f"user, not a link")
    os.chmod(root, 0o711)
    for above in root.parents:
        mode = above.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise IsolationError(f"--work-dir {root}: tasks cannot reach it, {above} is "
                                 f"{stat.filemode(mode)} (other users need x on it)")
    return root


def task_work_dir(root: Path, identity: Identity, parts: tuple[str, ...]) -> Path:
    """`<root>/<user>/<parts…>`, each directory owned by the task's user and 0700, made
    without following a link at any step: the user owns them, and a link it planted must
    not let us create or chown anything elsewhere (`claims.owned_dirs`, which the
    executor's launcher runs for the attempts it claims)."""
    try:
        owned_dirs(str(root), identity.uid, identity.gid, (identity.name, *parts))
    except WorkDirError as exc:
        raise IsolationError(str(exc)) from None
    return root.joinpath(identity.name, *parts)


def base_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the server's environment an isolated task inherits (`BASE_ENV`)."""
    return {k: v for k, v in environ.items()
            if k in BASE_ENV or k.startswith(_BASE_PREFIXES)}


def home_env(identity: Identity, home: Path | str) -> dict[str, str]:
    return {"HOME": str(home), "USER": identity.name, "LOGNAME": identity.name,
            "SHELL": "/bin/sh"}


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
