"""Isolation of tasks in the executor: the start-up decision (root or not, flags), OS user
names, tasks run as their own user in their own directory, cgroup limits, and tracking of
what escaped a task's session. Tests that switch users need root (CI is root)."""

from __future__ import annotations

import json
import os
import pwd
import signal
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from executor_support import spec, wait_exit, wait_until
from task_users import Scratch, task_python

from shoal.executors import cgroups
from shoal.executors.cgroups import CgroupVersion, TaskCgroups, TaskLimits
from shoal.executors.isolation import (
    IsolationError,
    Mode,
    Policy,
    check_work_root,
    decide,
    os_user_name,
)
from shoal.executors.local import Isolation, LocalExecutor
from shoal.executors.task import TaskLaunch, TaskPhase
from shoal.executors.wrapper import OOM_KILLED

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")

# ---- the decision at start ------------------------------------------------------------------


def test_root_runs_tasks_as_one_os_user_per_shoal_user() -> None:
    policy = decide(0, insecure_same_user=False, task_user=None)
    assert policy.mode is Mode.PER_USER and policy.switches_user


def test_root_with_a_task_user_runs_every_task_as_it() -> None:
    policy = decide(0, insecure_same_user=False, task_user="trainer")
    assert (policy.mode, policy.task_user) == (Mode.TASK_USER, "trainer")
    assert "read each other's" in policy.reason


def test_not_root_refuses_tasks_and_says_why() -> None:
    policy = decide(1000, insecure_same_user=False, task_user=None)
    assert policy.mode is Mode.REFUSED and not policy.switches_user
    assert "not root" in policy.reason and "--insecure-same-user" in policy.reason
    # A task user cannot help a server that cannot switch users.
    assert decide(1000, insecure_same_user=False, task_user="trainer").mode is Mode.REFUSED


@pytest.mark.parametrize("euid", [0, 1000])
def test_insecure_same_user_is_allowed_and_loud(euid: int) -> None:
    policy = decide(euid, insecure_same_user=True, task_user=None)
    assert policy.mode is Mode.SAME_USER and policy.reason.startswith("INSECURE")


@pytest.mark.parametrize(("flags", "message"), [
    ({"insecure_same_user": True, "task_user": "trainer"}, "exclude each other"),
    ({"insecure_same_user": False, "task_user": "root"}, "--task-user"),
    ({"insecure_same_user": False, "task_user": "Bad Name"}, "--task-user"),
    ({"insecure_same_user": False, "task_user": None, "prefix": "9bad"}, "--task-user-prefix"),
    ({"insecure_same_user": False, "task_user": None, "prefix": "x" * 30},
     "--task-user-prefix"),
])
def test_bad_flags_are_refused_with_the_flag(flags: dict[str, object], message: str) -> None:
    with pytest.raises(IsolationError, match=message):
        decide(0, **flags)  # type: ignore[arg-type]


def test_a_refusing_executor_refuses_every_launch_and_claims_nothing(tmp_path: Path) -> None:
    policy = decide(1000, insecure_same_user=False, task_user=None)
    executor = LocalExecutor(tmp_path / "shoal", isolation=Isolation(policy))
    with pytest.raises(IsolationError, match="not root"):
        executor.launch(spec("print('never')", user="alice"))
    assert not list(tmp_path.glob("shoal/tasks/*/*/*/launch.json"))


# ---- OS user names --------------------------------------------------------------------------


def test_os_user_names_are_valid_distinct_and_stable() -> None:
    assert os_user_name("shoal-", "alice") == "shoal-alice"
    odd = ["Alice", "a.b@example.com", "x" * 60, "bob smith", "-", "ünïcode", ""]
    names = [os_user_name("shoal-", user) for user in odd]
    assert len(set(names) | {"shoal-alice"}) == len(odd) + 1
    for name in names:
        assert len(name) <= 32 and name.startswith("shoal-"), name
        assert all(c.islower() or c.isdigit() or c in "_-" for c in name), name
    assert names == [os_user_name("shoal-", user) for user in odd]


# ---- tasks as their own user ----------------------------------------------------------------

REPORT = ("import json, os; st = os.stat('.'); print(json.dumps({'uid': os.getuid(), "
          "'gid': os.getgid(), 'groups': os.getgroups(), 'cwd': os.getcwd(), "
          "'owner': st.st_uid, 'mode': st.st_mode & 0o777, 'umask': os.umask(0), "
          "'env': dict(os.environ)}))")


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    made = Scratch()
    try:
        yield made
    finally:
        made.close()


def isolated(tmp_path: Path, scratch: Scratch, policy: Policy,
             task_cgroups: TaskCgroups | None = None) -> LocalExecutor:
    return LocalExecutor(tmp_path / "shoal", grace_period=2.0,
                         base_env={"PATH": "/usr/bin:/bin", "SERVER_SECRET": "hunter2"},
                         isolation=Isolation(policy, check_work_root(scratch.work),
                                             task_cgroups))


def run_report(executor: LocalExecutor, **kw: object) -> dict[str, object]:
    task = executor.launch(_spec(REPORT, **kw))
    status = wait_exit(executor, task)
    assert status.exit_code == 0, (status, task.stderr_path.read_text())
    data: dict[str, object] = json.loads(task.stdout_path.read_text().splitlines()[-1])
    return data


def _spec(code: str, **kw: object) -> TaskLaunch:
    """A task that runs `code` with a Python its OS user can start."""
    return replace(spec(code, **kw),  # type: ignore[arg-type]
                   command=(task_python(), "-c", code))


@as_root
def test_a_task_runs_as_its_users_own_account_in_its_own_directory(
        tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(tmp_path, scratch, decide(0, insecure_same_user=False,
                                                  task_user=None))
    report = run_report(executor, user="alice", job="iso")
    account = pwd.getpwnam("shoal-alice")
    assert (report["uid"], report["gid"]) == (account.pw_uid, account.pw_gid)
    assert report["groups"] in ([], [account.pw_gid])
    assert report["cwd"] == str(scratch.work / "shoal-alice" / "iso" / "worker-0")
    assert (report["owner"], report["mode"], report["umask"]) == (account.pw_uid, 0o700, 0o077)
    env = report["env"]
    assert isinstance(env, dict)
    assert env["HOME"] == report["cwd"] and env["USER"] == "shoal-alice"
    assert "SERVER_SECRET" not in env and env["PATH"] == "/usr/bin:/bin"
    # The task's records and logs stay the server's, private.
    for path in (tmp_path / "shoal", *tmp_path.glob("shoal/**/*")):
        assert path.stat().st_uid == os.geteuid(), path
        assert not stat.S_IMODE(path.stat().st_mode) & 0o077, path
    # Another Shoal user gets another account.
    assert run_report(executor, user="bob", job="iso2")["uid"] != report["uid"]


@as_root
def test_an_existing_account_that_is_not_shoals_is_never_used(
        tmp_path: Path, scratch: Scratch) -> None:
    # "nob" + "ody" names the system's `nobody`, which Shoal did not create.
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER, prefix="nob"))
    with pytest.raises(IsolationError, match="not created by Shoal"):
        executor.launch(_spec("print(1)", user="ody"))


@as_root
def test_a_job_without_a_user_cannot_run_isolated(tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER))
    with pytest.raises(IsolationError, match="no user"):
        executor.launch(_spec("print(1)", user=None))


@as_root
def test_a_link_planted_in_a_users_directory_is_not_followed(
        tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER))
    run_report(executor, user="alice", job="first")
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    # What a task of alice's could do in its own tree: point a job's directory elsewhere.
    (scratch.work / "shoal-alice" / "planted").symlink_to(victim)
    task = executor.launch(_spec("print(1)", user="alice", job="planted"))
    status = wait_exit(executor, task)
    assert status.exit_code == 127 and "planted" in status.detail
    assert victim.stat().st_uid == os.geteuid()


# ---- cgroups --------------------------------------------------------------------------------


@pytest.fixture
def task_cgroups() -> Iterator[TaskCgroups]:
    found = cgroups.detect(f"test-{os.getpid()}")
    # This machine kind (CI's) has writable hierarchies: no skip here.
    assert isinstance(found, TaskCgroups), found
    yield found
    found.release()  # every test's task cgroups are gone by now: so are the parents
    assert not any(p.exists() for p in (found.memory_parent, found.cpu_parent) if p)


@as_root
def test_memory_above_the_request_ends_oom_killed(
        tmp_path: Path, scratch: Scratch, task_cgroups: TaskCgroups) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER), task_cgroups)
    task = executor.launch(_spec("data = b'x' * (512 * 2**20)", user="alice",
                                 limits=TaskLimits(cpu_millis=500, memory_mib=64)))
    status = wait_exit(executor, task, timeout=60)
    assert (status.phase, status.signal, status.reason) == (
        TaskPhase.EXITED, signal.SIGKILL, OOM_KILLED)
    assert task.cgroups and not any(c.exists() for c in task.cgroups)


@as_root
def test_limits_are_written_and_the_task_is_in_its_cgroups(
        tmp_path: Path, scratch: Scratch, task_cgroups: TaskCgroups) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER), task_cgroups)
    code = "import time; print(open('/proc/self/cgroup').read(), flush=True); time.sleep(60)"
    task = executor.launch(_spec(code, user="alice",
                                 limits=TaskLimits(cpu_millis=250, memory_mib=100)))
    try:
        wait_until(lambda: "task-" in task.stdout_path.read_text(), timeout=30)
        for cgroup in task.cgroups:
            assert f"{cgroup.name}\n" in task.stdout_path.read_text()
        memory, cpu = task_cgroups.memory_parent, task_cgroups.cpu_parent
        if task_cgroups.version is CgroupVersion.V1:
            assert memory is not None and cpu is not None
            leaf = task.cgroups[0].name
            assert (memory / leaf / "memory.limit_in_bytes").read_text() == f"{100 << 20}\n"
            assert (cpu / leaf / "cpu.cfs_quota_us").read_text() == "25000\n"
    finally:
        executor.stop(task, grace_period=0.1)
    assert not any(c.exists() for c in task.cgroups)


ESCAPE = ("import subprocess, time; p = subprocess.Popen(['sleep', '600'], "
          "start_new_session=True); print(p.pid, flush=True); time.sleep(600)")


@as_root
def test_stop_kills_what_left_the_session(tmp_path: Path, scratch: Scratch,
                                          task_cgroups: TaskCgroups) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER), task_cgroups)
    task = executor.launch(_spec(ESCAPE, user="alice"))
    wait_until(lambda: task.stdout_path.read_text().strip() != "", timeout=30)
    escaped = int(task.stdout_path.read_text().split()[0])
    assert os.getsid(escaped) == escaped != task.pid
    status = executor.stop(task, grace_period=1.0)
    assert not status.running
    assert not psutil.pid_exists(escaped) or \
        psutil.Process(escaped).status() == psutil.STATUS_ZOMBIE


@as_root
def test_what_a_finished_task_left_behind_is_killed_with_it(
        tmp_path: Path, scratch: Scratch, task_cgroups: TaskCgroups) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER), task_cgroups)
    daemon = ("import subprocess; p = subprocess.Popen(['sleep', '600'], "
              "start_new_session=True); print(p.pid, flush=True)")
    task = executor.launch(_spec(daemon, user="alice"))
    assert wait_exit(executor, task, timeout=30).exit_code == 0
    left = int(task.stdout_path.read_text().split()[0])
    wait_until(lambda: not psutil.pid_exists(left)
               or psutil.Process(left).status() == psutil.STATUS_ZOMBIE, timeout=30)
    assert not any(c.exists() for c in task.cgroups)


def test_cgroup_v2_limits_and_delegation(tmp_path: Path) -> None:
    """v2, on a directory standing in for a delegated cgroup2 mount (the kernel's files
    are plain files here): controllers delegated to Shoal's parent, limits in the leaf."""
    own = tmp_path / "mnt" / "service"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.subtree_control").write_text("")
    mountinfo = f"41 31 0:38 / {tmp_path / 'mnt'} rw,relatime - cgroup2 cgroup2 rw\n"
    found = cgroups.detect("t", mountinfo=mountinfo, proc_cgroup="0::/service\n")
    assert isinstance(found, TaskCgroups) and found.version is CgroupVersion.V2
    assert found.memory_parent == found.cpu_parent == own / "shoal-t"
    assert (own / "cgroup.subtree_control").read_text() == "+cpu +memory"
    assert (own / "shoal-t" / "cgroup.subtree_control").read_text() == "+cpu +memory"
    [leaf] = found.create("/some/task/dir", TaskLimits(cpu_millis=1500, memory_mib=256))
    assert (leaf / "memory.max").read_text() == str(256 << 20)
    assert (leaf / "cpu.max").read_text() == "150000 100000"
    assert found.paths("/some/task/dir") == (leaf,)


def test_no_writable_hierarchy_is_said() -> None:
    found = cgroups.detect("t", mountinfo="", proc_cgroup="0::/\n")
    assert isinstance(found, cgroups.Unavailable) and found.reason


@as_root
def test_forgetting_a_job_removes_its_working_directories(
        tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER))
    cwd = Path(str(run_report(executor, user="alice", job="gone")["cwd"]))
    kept = Path(str(run_report(executor, user="alice", job="kept")["cwd"]))
    executor.forget_job("gone")
    assert not cwd.parent.exists() and kept.exists()


@as_root
def test_a_jobs_shared_file_is_readable_by_its_tasks_only(
        tmp_path: Path, scratch: Scratch) -> None:
    """Where the control plane puts a job's membership file: alice's tasks read it, bob's
    cannot, and the directory is the server's (no link of a task's is followed)."""
    executor = isolated(tmp_path, scratch, Policy(Mode.PER_USER))
    path = executor.job_file("membership", "elastic", "alice")
    path.write_text('{"worldSize": 2}\n')
    path.chmod(0o644)
    assert path.parent.stat().st_uid == os.geteuid()
    read = f"import sys; print(open({str(path)!r}).read().strip())"
    own = executor.launch(_spec(read, user="alice", job="elastic"))
    assert wait_exit(executor, own).exit_code == 0
    assert own.stdout_path.read_text() == '{"worldSize": 2}\n'
    other = executor.launch(_spec(read, user="bob", job="snoop"))
    assert wait_exit(executor, other).exit_code == 1
    assert "PermissionError" in other.stderr_path.read_text()


def test_a_work_root_made_under_a_private_umask_is_passable(scratch: Scratch) -> None:
    """`shoal up` runs under umask 0o077: the directories it makes for --work-dir must
    still let the tasks' users through."""
    old = os.umask(0o077)
    try:
        root = check_work_root(scratch.root / "var" / "lib" / "shoal" / "work")
    finally:
        os.umask(old)
    for directory in (root, *root.parents):
        assert directory.stat().st_mode & stat.S_IXOTH, directory
    with pytest.raises(IsolationError, match="other users need x"):
        private = scratch.root / "private"
        private.mkdir(mode=0o700)
        private.chmod(0o700)
        check_work_root(private / "work")


@as_root
def test_one_task_user_runs_every_task_and_a_spec_working_dir_is_honoured(
        tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(tmp_path, scratch, decide(0, insecure_same_user=False,
                                                  task_user="shoal-shared-tasks"))
    alice = run_report(executor, user="alice", job="a")
    bob = run_report(executor, user="bob", job="b")
    account = pwd.getpwnam("shoal-shared-tasks")
    assert alice["uid"] == bob["uid"] == account.pw_uid
    # A spec's own directory: the task runs there, with its user's rights (HOME stays its own).
    (scratch.shared / "data").mkdir()
    chosen = run_report(executor, user="alice", job="c",
                        working_dir=str(scratch.shared / "data"))
    assert chosen["cwd"] == str(scratch.shared / "data")
    env = chosen["env"]
    assert isinstance(env, dict)
    assert env["HOME"] == str(scratch.work / "shoal-shared-tasks" / "c" / "worker-0")
