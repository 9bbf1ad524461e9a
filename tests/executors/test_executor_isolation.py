"""Isolation of tasks in the executor: the start-up decision (root or not, flags), OS user
names, tasks run as their own user in their own directory, cgroup limits, and tracking of
what escaped a task's session. Tests that switch users need root (CI is root).

The tests marked `BOTH_ENGINES` run against the local executor and the Ray engine, whose
actors run as the user Ray was started as: root here (the cluster is started by the test,
as root, once for the module, and shut down at its end), so each attempt's node-local
executor switches to the task's user exactly as the local executor does. On Ray they check
what a tenant sees: its task runs as its own OS user in its own directory, with none of the
Ray node's environment but the base variables; it cannot read the control plane's files,
nor another tenant's environment (its SHOAL_TOKEN) or job file; its requests are its cgroup
limits, and stopping or ending it kills what it left running. What is the node-local
executor's own code and needs no Ray to show it (the checks on accounts, a planted link)
runs locally only; so do the start-up decision and the cgroup v2 layout, which start no
task."""

from __future__ import annotations

import json
import os
import pwd
import signal
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from executor_support import spec, wait_exit, wait_until
from ray_support import RayNodes, namespace_of
from task_users import Scratch, task_python

from shoal.executors import cgroups
from shoal.executors.cgroups import CgroupVersion, TaskCgroups, TaskLimits
from shoal.executors.contract import Executor
from shoal.executors.isolation import (
    IsolationError,
    Mode,
    Policy,
    check_work_root,
    decide,
    os_user_name,
)
from shoal.executors.local import Isolation, LocalExecutor
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase
from shoal.executors.wrapper import OOM_KILLED

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
#: "local-python": the local executor forking the Python wrapper instead of spawning the
#: compiled one (`shoal.executors.native`).
BOTH_ENGINES = pytest.mark.parametrize("engine", ["local", "local-python", "ray"],
                                       indirect=True)
#: A safety net only: on a loaded machine, and on Ray, a task can take seconds to start.
DEADLINE = 60.0

#: The environment of the server (or of the Ray node, whose workers inherit it): a task
#: gets PATH, never the secret.
SERVER_ENV = {"PATH": "/usr/bin:/bin", "SERVER_SECRET": "hunter2"}
#: The Ray node's name is the local executor's default node name.
NODE = "local"
_RAY = RayNodes({NODE: {"env_vars": SERVER_ENV}})


@pytest.fixture(scope="module", autouse=True)
def _ray_shutdown() -> Iterator[None]:
    with _RAY:  # started by the module's first Ray test, if any
        yield


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test: "local", or what `BOTH_ENGINES` parametrises."""
    return str(getattr(request, "param", "local"))

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


@BOTH_ENGINES
def test_a_refusing_executor_refuses_every_launch_and_claims_nothing(
        isolated: Isolated, tmp_path: Path) -> None:
    policy = decide(1000, insecure_same_user=False, task_user=None)
    executor = isolated(policy)
    with pytest.raises(IsolationError, match="not root") as refused:
        executor.launch(spec("print('never')", user="alice", node=NODE))
    assert str(refused.value) == policy.reason  # what the job's history will say, no more
    assert not list(tmp_path.glob("shoal/**/launch.json"))


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


Isolated = Callable[..., Executor]


@pytest.fixture
def isolated(engine: str, tmp_path: Path, scratch: Scratch) -> Iterator[Isolated]:
    """`isolated(policy, task_cgroups=None)`: an executor of the engine under test whose
    tasks are isolated by `policy`, with working directories under `scratch.work`."""
    root = tmp_path / "shoal"

    def make(policy: Policy, task_cgroups: TaskCgroups | None = None) -> Executor:
        isolation = Isolation(policy, check_work_root(scratch.work), task_cgroups)
        if engine.startswith("local"):
            return LocalExecutor(root, grace_period=2.0, base_env=SERVER_ENV,
                                 isolation=isolation, compiled=engine == "local")
        from shoal.executors.ray_engine import RayExecutor

        _RAY.cluster  # noqa: B018 - the module's first Ray test starts it
        return RayExecutor(root, namespace=namespace_of(root), grace_period=2.0,
                           isolation=isolation)

    yield make
    if engine == "ray":
        from shoal.executors.ray_engine import RayExecutor

        RayExecutor(root, namespace=namespace_of(root)).close()


def ray_worker_env() -> dict[str, str]:
    """`SERVER_ENV`'s variables as a Ray worker of the module's cluster has them."""
    import ray

    @ray.remote(num_cpus=0)
    def read() -> dict[str, str]:
        return {name: os.environ.get(name, "") for name in SERVER_ENV}

    found: dict[str, str] = ray.get(read.remote(), timeout=DEADLINE)
    return found


def output(executor: Executor, task: RunningTask, stream: str = "stdout") -> str:
    """A task's output, read through the executor contract (on Ray: on its node)."""
    assert stream in ("stdout", "stderr")
    return executor.read_log(task.job, task.group, task.index, stream,  # type: ignore[arg-type]
                             0, 1 << 20).data.decode()


def run_report(executor: Executor, **kw: object) -> dict[str, object]:
    task = executor.launch(_spec(REPORT, **kw))
    status = wait_exit(executor, task, DEADLINE)
    assert status.exit_code == 0, (status, output(executor, task, "stderr"))
    data: dict[str, object] = json.loads(output(executor, task).splitlines()[-1])
    return data


def _spec(code: str, **kw: object) -> TaskLaunch:
    """A task that runs `code` with a Python its OS user can start, on node `NODE`."""
    kw.setdefault("node", NODE)
    return replace(spec(code, **kw),  # type: ignore[arg-type]
                   command=(task_python(), "-c", code))


@as_root
@BOTH_ENGINES
def test_a_task_runs_as_its_users_own_account_in_its_own_directory(
        engine: str, isolated: Isolated, tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(decide(0, insecure_same_user=False, task_user=None))
    if engine == "ray":  # the node's workers have the secret: its tasks must not
        assert ray_worker_env() == SERVER_ENV
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


#: Tries to read each path of argv[1:] (a file, or a directory's listing); prints, per path,
#: the error's name, or "read".
PROBE = ("import json, os, sys\n"
         "seen = {}\n"
         "for path in sys.argv[1:]:\n"
         "    try:\n"
         "        os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read()\n"
         "        seen[path] = 'read'\n"
         "    except OSError as exc:\n"
         "        seen[path] = type(exc).__name__\n"
         "print(json.dumps(seen), flush=True)\n")


def probe(executor: Executor, paths: list[Path], **kw: object) -> dict[str, str]:
    """What a task (of `kw`'s user) could read of `paths`."""
    launch = _spec(PROBE, **kw)
    task = executor.launch(replace(launch, command=(*launch.command, *map(str, paths))))
    status = wait_exit(executor, task, DEADLINE)
    assert status.exit_code == 0, (status, output(executor, task, "stderr"))
    seen: dict[str, str] = json.loads(output(executor, task).splitlines()[-1])
    return seen


@as_root
@BOTH_ENGINES
def test_a_task_cannot_read_the_control_planes_files(
        isolated: Isolated, tmp_path: Path) -> None:
    """Nothing under the executor's root (on Ray: the node's, where its records and logs
    are) is readable by a task, its own log included: the server hands it descriptors."""
    executor = isolated(decide(0, insecure_same_user=False, task_user=None))
    first = executor.launch(_spec("print('server side')", user="alice", job="first"))
    assert wait_exit(executor, first, DEADLINE).exit_code == 0
    private = [tmp_path / "shoal", first.stdout_path, first.status_path]
    assert all(path.exists() for path in private)
    assert probe(executor, private, user="alice", job="snoop") == {
        str(path): "PermissionError" for path in private}


@as_root
@BOTH_ENGINES
def test_another_tenants_task_cannot_read_a_tasks_token(isolated: Isolated) -> None:
    """A task's SHOAL_TOKEN is in its environment, which its own OS user reads and another
    tenant's task cannot (`/proc/<pid>/environ`)."""
    executor = isolated(decide(0, insecure_same_user=False, task_user=None))
    holder = executor.launch(_spec("import os, time; print(os.getpid(), flush=True); "
                                   "time.sleep(120)", user="alice", job="holder",
                                   env={"SHOAL_TOKEN": "alice-token"}))
    try:
        wait_until(lambda: output(executor, holder).strip() != "", timeout=DEADLINE)
        environ = Path(f"/proc/{output(executor, holder).split()[0]}/environ")
        assert b"SHOAL_TOKEN=alice-token" in environ.read_bytes()
        assert probe(executor, [environ], user="bob", job="snoop") == {
            str(environ): "PermissionError"}
        # The same tenant's tasks are that OS user already: they can.
        assert probe(executor, [environ], user="alice", job="sibling") == {
            str(environ): "read"}
    finally:
        executor.stop(holder, grace_period=0.1)


@as_root
def test_an_existing_account_that_is_not_shoals_is_never_used(
        isolated: Isolated) -> None:
    # "nob" + "ody" names the system's `nobody`, which Shoal did not create.
    executor = isolated(Policy(Mode.PER_USER, prefix="nob"))
    with pytest.raises(IsolationError, match="not created by Shoal"):
        executor.launch(_spec("print(1)", user="ody"))


@as_root
def test_a_job_without_a_user_cannot_run_isolated(isolated: Isolated) -> None:
    executor = isolated(Policy(Mode.PER_USER))
    with pytest.raises(IsolationError, match="no user"):
        executor.launch(_spec("print(1)", user=None))


@as_root
def test_a_link_planted_in_a_users_directory_is_not_followed(
        isolated: Isolated, tmp_path: Path, scratch: Scratch) -> None:
    executor = isolated(Policy(Mode.PER_USER))
    run_report(executor, user="alice", job="first")
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    # What a task of alice's could do in its own tree: point a job's directory elsewhere.
    (scratch.work / "shoal-alice" / "planted").symlink_to(victim)
    task = executor.launch(_spec("print(1)", user="alice", job="planted"))
    status = wait_exit(executor, task, DEADLINE)
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
@BOTH_ENGINES
def test_memory_above_the_request_ends_oom_killed(
        isolated: Isolated, task_cgroups: TaskCgroups) -> None:
    executor = isolated(Policy(Mode.PER_USER), task_cgroups)
    task = executor.launch(_spec("data = b'x' * (512 * 2**20)", user="alice",
                                 limits=TaskLimits(cpu_millis=500, memory_mib=64)))
    status = wait_exit(executor, task, DEADLINE)
    assert (status.phase, status.signal, status.reason) == (
        TaskPhase.EXITED, signal.SIGKILL, OOM_KILLED)
    assert task.cgroups and not any(c.exists() for c in task.cgroups)


@as_root
@BOTH_ENGINES
def test_limits_are_written_and_the_task_is_in_its_cgroups(
        isolated: Isolated, task_cgroups: TaskCgroups) -> None:
    executor = isolated(Policy(Mode.PER_USER), task_cgroups)
    code = "import time; print(open('/proc/self/cgroup').read(), flush=True); time.sleep(60)"
    task = executor.launch(_spec(code, user="alice",
                                 limits=TaskLimits(cpu_millis=250, memory_mib=100)))
    try:
        wait_until(lambda: "task-" in output(executor, task), timeout=DEADLINE)
        assert task.cgroups
        for cgroup in task.cgroups:
            assert f"{cgroup.name}\n" in output(executor, task)
        memory, cpu = task_cgroups.memory_parent, task_cgroups.cpu_parent
        if task_cgroups.version is CgroupVersion.V1:
            assert memory is not None and cpu is not None
            leaf = task.cgroups[0].name
            assert (memory / leaf / "memory.limit_in_bytes").read_text() == f"{100 << 20}\n"
            assert (cpu / leaf / "cpu.cfs_quota_us").read_text() == "25000\n"
    finally:
        executor.stop(task, grace_period=0.1)
    assert not any(c.exists() for c in task.cgroups)


@as_root
@pytest.mark.parametrize("engine", ["ray"], indirect=True)
def test_a_ray_node_without_the_control_planes_cgroups_makes_its_own(
        isolated: Isolated, task_cgroups: TaskCgroups) -> None:
    """On another machine the parent cgroups `shoal up` made do not exist: the node makes
    its own, under the same tag, and its tasks still get their limits."""
    tag = f"elsewhere-{os.getpid()}"
    absent = TaskCgroups(task_cgroups.version,
                         *(None if p is None else p.with_name(f"shoal-{tag}")
                           for p in (task_cgroups.memory_parent, task_cgroups.cpu_parent)))
    assert absent.memory_parent is not None and not absent.memory_parent.exists()
    executor = isolated(Policy(Mode.PER_USER), absent)
    code = "import time; print(open('/proc/self/cgroup').read(), flush=True); time.sleep(60)"
    task = executor.launch(_spec(code, user="alice",
                                 limits=TaskLimits(cpu_millis=250, memory_mib=100)))
    try:
        wait_until(lambda: "task-" in output(executor, task), timeout=DEADLINE)
        assert task.cgroups and all(c.parent.name == f"shoal-{tag}" for c in task.cgroups)
        for cgroup in task.cgroups:
            assert f"{cgroup.name}\n" in output(executor, task)
        memory = [c for c in task.cgroups if (c / "memory.limit_in_bytes").exists()
                  or (c / "memory.max").exists()]
        assert memory, task.cgroups
        limit = memory[0] / ("memory.max" if absent.version is CgroupVersion.V2
                             else "memory.limit_in_bytes")
        assert limit.read_text().strip() == str(100 << 20)
    finally:
        executor.stop(task, grace_period=0.1)
        for parent in {c.parent for c in task.cgroups}:  # the node made them: empty now
            parent.rmdir()
    assert not any(c.exists() for c in task.cgroups)


ESCAPE = ("import subprocess, time; p = subprocess.Popen(['sleep', '600'], "
          "start_new_session=True); print(p.pid, flush=True); time.sleep(600)")


@as_root
@BOTH_ENGINES
def test_stop_kills_what_left_the_session(isolated: Isolated,
                                          task_cgroups: TaskCgroups) -> None:
    executor = isolated(Policy(Mode.PER_USER), task_cgroups)
    task = executor.launch(_spec(ESCAPE, user="alice"))
    wait_until(lambda: output(executor, task).strip() != "", timeout=DEADLINE)
    escaped = int(output(executor, task).split()[0])
    assert os.getsid(escaped) == escaped != task.pid
    status = executor.stop(task, grace_period=1.0)
    assert not status.running
    assert not psutil.pid_exists(escaped) or \
        psutil.Process(escaped).status() == psutil.STATUS_ZOMBIE


@as_root
@BOTH_ENGINES
def test_what_a_finished_task_left_behind_is_killed_with_it(
        isolated: Isolated, task_cgroups: TaskCgroups) -> None:
    executor = isolated(Policy(Mode.PER_USER), task_cgroups)
    daemon = ("import subprocess; p = subprocess.Popen(['sleep', '600'], "
              "start_new_session=True); print(p.pid, flush=True)")
    task = executor.launch(_spec(daemon, user="alice"))
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    left = int(output(executor, task).split()[0])
    wait_until(lambda: not psutil.pid_exists(left)
               or psutil.Process(left).status() == psutil.STATUS_ZOMBIE, timeout=DEADLINE)
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
@BOTH_ENGINES
def test_forgetting_a_job_removes_its_working_directories(isolated: Isolated) -> None:
    executor = isolated(Policy(Mode.PER_USER))
    cwd = Path(str(run_report(executor, user="alice", job="gone")["cwd"]))
    kept = Path(str(run_report(executor, user="alice", job="kept")["cwd"]))
    executor.forget_job("gone")
    assert not cwd.parent.exists() and kept.exists()


@as_root
@BOTH_ENGINES
def test_a_jobs_shared_file_is_readable_by_its_tasks_only(isolated: Isolated) -> None:
    """Where the control plane puts a job's membership file (on Ray: on the nodes): alice's
    tasks read it, bob's cannot, and the directory is the server's (no link of a task's is
    followed). Written under `shoal up`'s own umask (0o077), which must not close it."""
    os.umask(0o077)  # the autouse `_process_umask` fixture restores the run's own
    executor = isolated(Policy(Mode.PER_USER))
    path = executor.write_job_file("membership", "elastic", "alice", b'{"worldSize": 2}\n')
    assert path == executor.job_file("membership", "elastic", "alice")
    assert path.parent.stat().st_uid == os.geteuid()
    read = f"import sys; print(open({str(path)!r}).read().strip())"
    own = executor.launch(_spec(read, user="alice", job="elastic"))
    assert wait_exit(executor, own, DEADLINE).exit_code == 0
    assert output(executor, own) == '{"worldSize": 2}\n'
    other = executor.launch(_spec(read, user="bob", job="snoop"))
    assert wait_exit(executor, other, DEADLINE).exit_code == 1
    assert "PermissionError" in output(executor, other, "stderr")


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
@BOTH_ENGINES
def test_one_task_user_runs_every_task_and_a_spec_working_dir_is_honoured(
        isolated: Isolated, scratch: Scratch) -> None:
    executor = isolated(decide(0, insecure_same_user=False, task_user="shoal-shared-tasks"))
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
