"""The local executor's launches through its launcher: what the server sends per task and
what it makes of the answer.

A launch used to claim its attempt, make its directories, its user's working directory
and its cgroups on the server's launch lane, a few dozen system calls and ~0.6 ms of
Python per task holding the server's GIL between them. Now the lane builds one JSON line
per task — the attempt's claim record, its environment, its command, where its
directories go — from strings (no file is touched), and the launcher process
(`wrapper.py --serve`, on the other core) does the rest: the attempt's private
directories, the exclusive claim (`launch.json`), the working directory, the cgroups
(`shoal.executors.claims`, the same code the executor runs itself), then the wrapper's
spawn, and answers its pid. The guarantees stay where they were:

- *At most once.* The claim is created exclusively, by whichever process makes it; an
  attempt found claimed is answered `claimed` and handled here as the executor always
  handled one (`LocalExecutor._existing`: its pid record, or a second, last claim).
- *A request whose answer never came* (the launcher died) is sent again to a new one
  (`Launcher.ask_many`): claimed already, it is answered `claimed`; if the first launcher
  died between the claim and the spawn, no pid record appears and the second claim starts
  it; if it had spawned the wrapper, that wrapper's exclusive pid record names the one
  process that runs the command. The same holds when the server dies with requests unanswered:
  the launcher reads the end of its input and exits, and the restarted server finds the
  claims.
- *Isolation.* The launcher is the server's user and makes what the server made, as it
  made it; a task still gets only descriptors of its logs, its own environment and user.
- *Refusals keep their place.* A spec that can never run (a bad name, no command, a NUL
  byte, no OS user for its user) raises here before anything is claimed; a start that
  cannot happen (a missing working directory, a refused cgroup) is recorded in the
  attempt's status by the launcher, as the executor did (`not_started`).

An executor without a launcher (`launcher=False`) and relaunches keep the executor's own
path (`LocalExecutor._prepare`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shoal.executors.isolation import base_env, home_env
from shoal.executors.launcher import Answer, Launcher, LaunchError
from shoal.executors.local_files import check_name
from shoal.executors.processes import check_launchable
from shoal.executors.task import RunningTask, TaskLaunch, task_env
from shoal.executors.wrapper import LAUNCH_FILE, STATUS_FILE

if TYPE_CHECKING:
    from shoal.executors.local import LocalExecutor


class Inherited:
    """What a batch's tasks inherit of the server (`base_env`, else `os.environ`; its
    working directory), read once for the batch: `os.environ` decodes every variable each
    time it is read, which was a tenth of a launch's Python in a burst."""

    __slots__ = ("_base", "_cwd", "_isolated", "_whole")

    def __init__(self, base: Mapping[str, str] | None) -> None:
        self._base = base
        self._whole: Mapping[str, str] | None = None
        self._isolated: Mapping[str, str] | None = None
        self._cwd: str | None = None

    def whole(self) -> Mapping[str, str]:
        """All of it: a task that runs as the server's user starts from it."""
        if self._whole is None:
            self._whole = dict(os.environ if self._base is None else self._base)
        return self._whole

    def isolated(self) -> Mapping[str, str]:
        """Only `isolation.BASE_ENV` of it: a task that runs as its own user."""
        if self._isolated is None:
            self._isolated = base_env(os.environ if self._base is None else self._base)
        return self._isolated

    def cwd(self) -> str:
        """The server's working directory: where a task that names none starts, as a
        child of the server would (the launcher's own is "/")."""
        if self._cwd is None:
            self._cwd = os.getcwd()
        return self._cwd


@dataclass(frozen=True, slots=True)
class _Claim:
    """One attempt sent to the launcher whole."""

    spec: TaskLaunch
    task_dir: str
    stdout: str
    stderr: str
    cgroups: tuple[str, ...]
    record: dict[str, Any]
    """Its claim record (`launch.json`), kept for a second claim."""
    line: bytes


def launch_many(executor: LocalExecutor, launcher: Launcher, specs: Sequence[TaskLaunch],
                inherited: Inherited) -> list[RunningTask | BaseException]:
    """`LocalExecutor.launch_many` through the launcher: one request per spec, sent
    together and answered together (`Launcher.ask_many`)."""
    results: list[RunningTask | BaseException | None] = [None] * len(specs)
    sent: list[tuple[int, _Claim]] = []
    for i, spec in enumerate(specs):
        try:
            sent.append((i, _claim(executor, spec, inherited)))
        except Exception as exc:
            results[i] = exc
    answers = launcher.ask_many([claim.line for _, claim in sent])
    for (i, claim), answer in zip(sent, answers, strict=True):
        try:
            results[i] = _landed(executor, claim, answer)
        except Exception as exc:
            results[i] = exc
    return [result for result in results if result is not None]


def _claim(executor: LocalExecutor, spec: TaskLaunch, inherited: Inherited) -> _Claim:
    """The request that claims and starts `spec`'s attempt. Raises ValueError for a launch
    that can never work (nothing is sent, nothing claimed)."""
    check_name("job", spec.job)
    check_name("group", spec.group)
    if not spec.command:
        raise ValueError(f"task {spec.job}/{spec.group}/{spec.index} has no command")
    # Who it runs as is settled before the claim: a task refused here leaves no claim.
    identity = executor.accounts.identity(spec.user)
    # Strings joined as `JobFiles.task_dir` and `log_paths` join them (names are checked
    # path components): the same paths, without a Path made per level.
    root = str(executor.root).rstrip("/")
    task = f"{spec.job}/{spec.group}-{spec.index}"
    task_dir = f"{root}/tasks/{task}/attempt-{spec.attempt}"
    out, err = f"{root}/logs/{task}.out", f"{root}/logs/{task}.err"
    cgroups = executor.isolation.cgroups
    paths = () if cgroups is None else cgroups.leaves(task_dir)
    record = {"job": spec.job, "group": spec.group, "index": spec.index,
              "attempt": spec.attempt, "node": spec.node, "gpus": list(spec.gpus),
              "command": list(spec.command), "stdout": out, "stderr": err,
              "cgroups": list(paths), "claimed_at": time.time()}
    work: tuple[str, tuple[str, ...]] | None = None
    uid = gid = None
    cwd: str | None
    if identity is not None:
        work_root = executor.isolation.work_root
        assert work_root is not None
        names = (identity.name, spec.job, f"{spec.group}-{spec.index}")
        home = os.path.join(work_root, *names)
        env = task_env(spec, {**inherited.isolated(), **home_env(identity, home)})
        cwd, work, uid, gid = spec.working_dir or home, (str(work_root), names), \
            identity.uid, identity.gid
    else:
        env, cwd = task_env(spec, inherited.whole()), spec.working_dir
    check_launchable(spec.command, env, None)  # the directory: the launcher's to check
    if cwd is not None and "\0" in cwd:
        raise ValueError("embedded null byte in the command or its working directory")
    line = json.dumps({
        "claim": {"root": root or "/", "record": record, "work": work,
                  "check_dir": spec.working_dir,
                  "cgroups": None if cgroups is None else cgroups.spec(spec.limits)},
        "task_dir": task_dir, "command": record["command"], "env": env,
        "cwd": cwd or inherited.cwd(), "stdout": out, "stderr": err, "uid": uid,
        "gid": gid, "cgroups": record["cgroups"]}).encode() + b"\n"
    return _Claim(spec, task_dir, out, err, paths, record, line)


def _landed(executor: LocalExecutor, claim: _Claim, answer: Answer) -> RunningTask:
    """The handle of a claimed attempt, from the launcher's answer."""
    spec, reply = claim.spec, answer.reply
    task_dir = Path(claim.task_dir)
    if reply is not None and "refused" in reply:
        raise LaunchError(reply["refused"])  # before its claim: nothing was claimed
    if reply is not None and "claimed" in reply:
        # Claimed before: by an executor before a restart, or by a launcher that died
        # before its answer came.
        return executor.existing(task_dir, spec, claim.record)
    handle = RunningTask(spec.job, spec.group, spec.index, spec.attempt, 0, 0.0,
                         Path(claim.stdout), Path(claim.stderr), task_dir / STATUS_FILE)
    if reply is not None and "not_started" in reply:
        return handle  # its status record says why
    if reply is None or "error" in reply:
        error = LaunchError(f"cannot start the task's wrapper: {reply['error']}"
                            if reply is not None else
                            "the launcher died twice while starting the task's wrapper")
        if not (task_dir / LAUNCH_FILE).exists():
            raise error  # never claimed
        # Typically a fork refused: nothing runs, and the record says why.
        return executor.cannot_start(RunningTask(
            spec.job, spec.group, spec.index, spec.attempt, 0, 0.0, handle.stdout_path,
            handle.stderr_path, handle.status_path, tuple(Path(c) for c in claim.cgroups)),
            error)
    if answer.resent:
        # Sent twice: the wrapper's own, exclusive pid record says which process runs it.
        return executor.existing(task_dir, None, {})
    # The wrapper writes its own pid record before anything else: a control plane that
    # dies now finds it there, or (the wrapper killed before it) the store's record of
    # this pid, which polls LOST.
    return RunningTask(spec.job, spec.group, spec.index, spec.attempt, int(reply["pid"]),
                       float(reply["start_time"]), handle.stdout_path, handle.stderr_path,
                       handle.status_path, tuple(Path(c) for c in claim.cgroups))
