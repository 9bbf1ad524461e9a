"""The executor contract (`shoal.executors.contract`), checked against every engine with real
processes. An engine joins by adding one entry to `ENGINES`: how to start an instance of it
over a root (a second instance over the same root is a control plane restarted), which
nodes it has and how to end what a test left running. The Ray engine runs against one real
multi-node Ray cluster started on this machine for the whole module (a head and a worker
with fake GPUs, `ray.cluster_utils.Cluster`), shut down at the module's end. Every wait is
on a condition (a state reached, a line written); deadlines are only safety nets."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_support import Engine, engines
from executor_support import recorded, spec, wait_exit, wait_until
from ray_support import RayNodes

from shoal.executors.contract import Executor, NodeHealth, RecordedAttempt
from shoal.executors.task import RunningTask, TaskPhase

#: A safety net only: on a loaded machine a start can take seconds.
DEADLINE = 60.0
GRACE = 1.0


#: A head and a worker with 4 fake GPUs (a node resource only: Shoal assigns indices).
_RAY = RayNodes({"ray-head": {}, "ray-gpu": {"num_gpus": 4}})
RAY_NODES = ("ray-gpu", "ray-head")
ENGINES = engines(_RAY, RAY_NODES, GRACE)


@pytest.fixture(scope="module", autouse=True)
def _ray_shutdown() -> Iterator[None]:
    with _RAY:
        yield


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    chosen = ENGINES[str(request.param)]
    yield chosen
    chosen.cleanup(tmp_path / "engine")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "engine"


def _log(executor: Executor, task: RunningTask) -> str:
    return executor.read_log(task.job, task.group, task.index, "stdout", 0, 1 << 20
                             ).data.decode()


def _until_printed(executor: Executor, task: RunningTask, text: str) -> None:
    wait_until(lambda: text in _log(executor, task), timeout=DEADLINE)


def _blocked(started: Path, release: Path, code: int = 0) -> str:
    """A task that counts its starts in `started`, says "ready", and exits with `code` once
    `release` exists (or after two minutes, should a test fail before releasing it)."""
    return (f"import os, sys, time\n"
            f"open({str(started)!r}, 'a').write('x\\n')\n"
            f"print('ready', flush=True)\n"
            f"end = time.monotonic() + 120\n"
            f"while not os.path.exists({str(release)!r}) and time.monotonic() < end:\n"
            f"    time.sleep(0.01)\n"
            f"sys.exit({code})\n")


def test_launch_runs_the_command_with_its_env_and_gpus(engine: Engine, root: Path) -> None:
    executor = engine.start(root)
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    task = executor.launch(spec(code, job="train", group="trainer", index=1, gpus=(2, 3),
                                world_size=4, rank=3, master_addr="10.0.0.7",
                                node=engine.nodes[0],
                                env={"FOO": "bar", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}))
    assert task.pid > 0
    status = wait_exit(executor, task, DEADLINE)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 0), status
    env = json.loads(_log(executor, task).strip().splitlines()[-1])
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"  # exactly its GPUs, never the job's own
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_ADDR"]) == ("3", "4", "10.0.0.7")
    assert (env["SHOAL_JOB"], env["SHOAL_TASK_GROUP"], env["SHOAL_TASK_INDEX"]) == (
        "train", "trainer", "1")
    assert env["FOO"] == "bar"
    no_gpus = executor.launch(spec(code, job="cpu", node=engine.nodes[0]))
    wait_exit(executor, no_gpus, DEADLINE)
    assert json.loads(_log(executor, no_gpus).splitlines()[-1])["CUDA_VISIBLE_DEVICES"] == ""


def test_a_second_launch_of_an_attempt_starts_no_second_process(
        engine: Engine, root: Path, tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    executor = engine.start(root)
    launch = spec(_blocked(started, release), node=engine.nodes[0])
    first = executor.launch(launch)
    again = executor.launch(launch)
    # A control plane that crashed between the store's bind and the launch launches again.
    after_restart = engine.start(root).launch(launch)
    assert first.pid == again.pid == after_restart.pid > 0
    _until_printed(executor, first, "ready")
    release.touch()
    assert wait_exit(executor, first, DEADLINE).exit_code == 0
    assert started.read_text() == "x\n"
    # A new attempt of the same task is a new start.
    wait_exit(executor, executor.launch(spec(_blocked(started, release), attempt=1,
                                             node=engine.nodes[0])), DEADLINE)
    assert started.read_text() == "x\nx\n"


def test_a_batch_launches_each_spec_and_a_bad_one_is_its_own_result(
        engine: Engine, root: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    executor = engine.start(root)
    marks = [tmp_path / f"started-{i}" for i in range(3)]
    batch = [spec(_blocked(marks[0], release, code=0), job="batch", index=0,
                  node=engine.nodes[0]),
             spec("pass", job="batch", index=1, node=engine.nodes[0], env={"A=B": "1"}),
             spec(_blocked(marks[2], release, code=3), job="batch", index=2,
                  node=engine.nodes[0])]
    first, bad, third = executor.launch_many(batch)
    assert isinstance(bad, ValueError)  # as `launch` raises it; the others still launch
    assert isinstance(first, RunningTask) and isinstance(third, RunningTask)
    assert (first.index, third.index) == (0, 2) and first.pid > 0 and third.pid > 0
    _until_printed(executor, first, "ready")
    _until_printed(executor, third, "ready")
    assert [s.running for s in executor.poll_many([first, third])] == [True, True]
    # The same batch again (a control plane restarted mid-launch): the same attempts.
    again = engine.start(root).launch_many([batch[0], batch[2]])
    assert [t.pid for t in again if isinstance(t, RunningTask)] == [first.pid, third.pid]
    release.touch()
    wait_until(lambda: not any(s.running for s in executor.poll_many([first, third])),
               timeout=DEADLINE)
    assert [s.exit_code for s in executor.poll_many([first, third])] == [0, 3]
    assert [m.read_text() for m in (marks[0], marks[2])] == ["x\n", "x\n"]
    assert not marks[1].exists() and executor.poll_many([]) == []


def test_poll_reports_running_then_the_exit_code(engine: Engine, root: Path,
                                                 tmp_path: Path) -> None:
    release = tmp_path / "release"
    executor = engine.start(root)
    task = executor.launch(spec(_blocked(tmp_path / "started", release, code=3),
                                node=engine.nodes[0]))
    _until_printed(executor, task, "ready")
    assert executor.poll(task).running  # it waits for `release`: it cannot have ended
    release.touch()
    status = wait_exit(executor, task, DEADLINE)
    assert (status.phase, status.exit_code, status.signal) == (TaskPhase.EXITED, 3, None)
    assert executor.poll(task) == status  # the outcome is durable
    assert engine.start(root).poll(task) == status
    assert not executor.request_stop(task, GRACE)  # ended: nothing is signalled


def test_an_ended_attempt_reports_when_it_ended_within_its_run(engine: Engine, root: Path,
                                                               tmp_path: Path) -> None:
    release = tmp_path / "release"
    executor = engine.start(root)
    task = executor.launch(spec(_blocked(tmp_path / "started", release),
                                node=engine.nodes[0]))
    _until_printed(executor, task, "ready")
    assert executor.poll(task).ended_at is None  # running: it has not ended
    released = time.time()
    release.touch()  # it cannot end before this
    status = wait_exit(executor, task, DEADLINE)
    seen = time.time()
    assert status.ended_at is not None
    assert released <= status.ended_at <= seen
    # Durable: an engine restarted later reports the same end, not when it looked.
    assert engine.start(root).poll(task).ended_at == status.ended_at


def test_request_stop_escalates_to_sigkill_after_the_grace_period(engine: Engine,
                                                                  root: Path) -> None:
    ignores_sigterm = ("import signal, time\n"
                       "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "print('ready', flush=True)\n"
                       "time.sleep(120)\n")
    executor = engine.start(root)
    task = executor.launch(spec(ignores_sigterm, node=engine.nodes[0]))
    _until_printed(executor, task, "ready")
    asked = time.monotonic()
    assert executor.request_stop(task, GRACE)
    status = wait_exit(executor, task, DEADLINE)  # polling is what escalates
    assert time.monotonic() - asked >= GRACE  # never killed before its grace ran out
    assert (status.phase, status.signal) == (TaskPhase.EXITED, int(signal.SIGKILL))


def test_stop_ends_a_task_that_handles_sigterm(engine: Engine, root: Path) -> None:
    traps_sigterm = ("import signal, sys, time\n"
                     "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
                     "print('ready', flush=True)\n"
                     "time.sleep(120)\n")
    executor = engine.start(root)
    task = executor.launch(spec(traps_sigterm, node=engine.nodes[0]))
    _until_printed(executor, task, "ready")
    status = executor.stop(task, DEADLINE)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 7)


def test_a_restarted_engine_adopts_a_live_attempt(engine: Engine, root: Path,
                                                  tmp_path: Path) -> None:
    release = tmp_path / "release"
    task = engine.start(root).launch(spec(_blocked(tmp_path / "started", release),
                                          node=engine.nodes[0]))
    restarted = engine.start(root)
    _until_printed(restarted, task, "ready")
    adopted = restarted.adopt(recorded(task))
    assert adopted is not None
    assert (adopted.job, adopted.group, adopted.index, adopted.attempt, adopted.pid) == (
        task.job, task.group, task.index, task.attempt, task.pid)
    assert restarted.poll(adopted).running
    release.touch()
    assert wait_exit(restarted, adopted, DEADLINE).exit_code == 0


def test_a_restarted_engine_finds_what_ended_while_it_was_down(engine: Engine,
                                                               root: Path) -> None:
    task = engine.start(root).launch(spec("import sys; sys.exit(5)", node=engine.nodes[0]))
    # Another instance watches it end; the one adopting it starts only after that.
    wait_exit(engine.start(root), engine.start(root).recorded(recorded(task)), DEADLINE)
    restarted = engine.start(root)
    adopted = restarted.adopt(recorded(task))
    assert adopted is not None
    status = restarted.poll(adopted)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 5)


def test_an_attempt_gone_without_an_outcome_is_lost(engine: Engine, root: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    executor = engine.start(root)
    never = RecordedAttempt("job1", "worker", 0, 7, gone.pid, 1.0)
    assert executor.adopt(never) is None
    assert executor.poll(executor.recorded(never)).phase is TaskPhase.LOST


def test_logs_are_read_from_an_offset(engine: Engine, root: Path) -> None:
    executor = engine.start(root)
    code = ("import sys; print('one'); print('two'); "
            "print('oops', file=sys.stderr)")
    task = executor.launch(spec(code, node=engine.nodes[0]))
    wait_exit(executor, task, DEADLINE)
    read = executor.read_log
    assert read("job1", "worker", 0, "stdout", 0, 1 << 20).data == b"one\ntwo\n"
    chunk = read("job1", "worker", 0, "stdout", 4, 1 << 20)
    assert (chunk.data, chunk.next_offset) == (b"two\n", 8)
    assert read("job1", "worker", 0, "stdout", 0, 2).data == b"on"
    assert read("job1", "worker", 0, "stdout", 8, 1 << 20).data == b""
    assert read("job1", "worker", 0, "stderr", 0, 1 << 20).data == b"oops\n"
    assert read("job1", "worker", 5, "stdout", 0, 1 << 20).data == b""  # no such log yet


def _follow(executor: Executor, limit: int) -> list[tuple[int, bytes]]:
    """What a follower reads from offset 0, `limit` bytes at a time: (offset, bytes) each."""
    chunks: list[tuple[int, bytes]] = []
    offset = 0
    while (chunk := executor.read_log("job1", "worker", 0, "stdout", offset, limit)).data:
        chunks.append((chunk.offset, chunk.data))
        offset = chunk.next_offset
    return chunks


def test_a_task_log_holds_every_attempt_in_order_wherever_it_ran(engine: Engine,
                                                                  root: Path) -> None:
    executor = engine.start(root)
    a, b = engine.nodes[0], engine.nodes[1]
    # A retry goes to another node and back (its node died, a gang restart).
    for attempt, (node, word) in enumerate([(a, "one"), (b, "two"), (a, "three")]):
        task = executor.launch(spec(f"print({word!r})", attempt=attempt, node=node))
        assert wait_exit(executor, task, DEADLINE).exit_code == 0
    whole = b"one\ntwo\nthree\n"
    assert b"".join(data for _, data in _follow(executor, 1 << 20)) == whole
    for offset in range(len(whole) + 1):  # a read from anywhere: where it says, no gap
        chunk = executor.read_log("job1", "worker", 0, "stdout", offset, 1 << 20)
        assert chunk.offset == offset
        assert whole[offset:].startswith(chunk.data) and (chunk.data or offset == len(whole))
    for limit in (1, 2, 5):  # a follower with small reads gets every byte at its offset
        chunks = _follow(executor, limit)
        assert all(len(data) <= limit for _, data in chunks)
        assert [o for o, _ in chunks] == list(
            itertools.accumulate((len(d) for _, d in chunks[:-1]), initial=0))
        assert b"".join(data for _, data in chunks) == whole
    # A restarted engine reads the same bytes at the same offsets.
    assert _follow(engine.start(root), 3) == _follow(executor, 3)


def test_a_forgotten_job_starts_from_scratch(engine: Engine, root: Path) -> None:
    executor = engine.start(root)
    task = executor.launch(spec("print('first')", node=engine.nodes[0]))
    wait_exit(executor, task, DEADLINE)
    executor.forget_job("job1")
    assert executor.read_log("job1", "worker", 0, "stdout", 0, 1 << 20).data == b""
    again = executor.launch(spec("print('second')", node=engine.nodes[0]))
    wait_exit(executor, again, DEADLINE)
    assert _log(executor, again) == "second\n"


def test_a_renamed_job_keeps_its_logs_and_the_name_starts_from_scratch(
        engine: Engine, root: Path) -> None:
    executor = engine.start(root)
    task = executor.launch(spec("print('first')", node=engine.nodes[0]))
    wait_exit(executor, task, DEADLINE)
    executor.rename_job("job1", "job1.1")
    assert executor.read_log("job1.1", "worker", 0, "stdout", 0, 1 << 20).data == b"first\n"
    assert executor.read_log("job1", "worker", 0, "stdout", 0, 1 << 20).data == b""
    again = executor.launch(spec("print('second')", node=engine.nodes[0]))  # attempt 1 again
    wait_exit(executor, again, DEADLINE)
    assert _log(executor, again) == "second\n"
    assert executor.read_log("job1.1", "worker", 0, "stdout", 0, 1 << 20).data == b"first\n"


def test_nodes_are_listed_with_their_health(engine: Engine, root: Path) -> None:
    nodes = engine.start(root).nodes()
    assert sorted(n.name for n in nodes) == sorted(engine.nodes)
    assert all(n.ready and n.reason == "" for n in nodes)
    if engine.name.startswith("local"):  # declared nodes: this machine, nothing more to say
        assert all(n == NodeHealth(n.name, ready=True) for n in nodes)
    else:  # a live inventory: where each node is, and what it offers
        assert all(n.address and n.node is not None and n.node.name == n.name
                   for n in nodes)


def test_a_job_file_is_read_by_the_job_tasks_on_their_nodes(engine: Engine, root: Path,
                                                            tmp_path: Path) -> None:
    executor = engine.start(root)
    path = executor.write_job_file("membership", "job1", None, b'{"version": 1}\n')
    assert path == executor.job_file("membership", "job1", None)
    rewritten, removed = tmp_path / "rewritten", tmp_path / "removed"
    reads = (f"import os, time\n"
             f"def wait(p):\n"
             f"    end = time.monotonic() + 120\n"
             f"    while not os.path.exists(p) and time.monotonic() < end:\n"
             f"        time.sleep(0.01)\n"
             f"print(open({str(path)!r}).read(), end='', flush=True)\n"
             f"wait({str(rewritten)!r})\n"
             f"print(open({str(path)!r}).read(), end='', flush=True)\n"
             f"wait({str(removed)!r})\n"
             f"print(os.path.exists({str(path)!r}))\n")
    # One task per node: the file is at the same path on each.
    tasks = [executor.launch(spec(reads, index=i, node=node))
             for i, node in enumerate(engine.nodes)]
    for task in tasks:
        _until_printed(executor, task, '{"version": 1}\n')
    executor.write_job_file("membership", "job1", None, b'{"version": 2}\n')
    rewritten.touch()
    for task in tasks:
        _until_printed(executor, task, '{"version": 2}\n')
    executor.remove_job_file("membership", "job1")
    removed.touch()
    for task in tasks:
        assert wait_exit(executor, task, DEADLINE).exit_code == 0
        assert _log(executor, task) == '{"version": 1}\n{"version": 2}\nFalse\n'


# ---- what only the Ray engine can show ----------------------------------------------------


def _named_actors(namespace: str) -> list[str]:
    import ray

    return sorted(str(entry["name"]) for entry in ray.util.list_named_actors(all_namespaces=True)
                  if entry["namespace"] == namespace)


def test_ray_runs_each_attempt_on_exactly_the_node_shoal_chose(root: Path,
                                                              tmp_path: Path) -> None:
    import ray

    from shoal.executors.ray_engine import NODE_LABEL, RayExecutor, supervisor_name

    executor = ENGINES["ray"].start(root)
    assert isinstance(executor, RayExecutor)
    try:
        ids = {n["Labels"][NODE_LABEL]: n["NodeID"] for n in ray.nodes() if n["Alive"]}
        for node in RAY_NODES:
            release = tmp_path / f"release-{node}"
            tasks = executor.launch_many([
                spec(_blocked(tmp_path / f"started-{node}-{i}", release), job=f"on-{node}",
                     index=i, node=node) for i in range(3)])
            # The node's one supervisor launched them, on that node: no actor per attempt.
            supervisor = ray.get_actor(supervisor_name(node), namespace=executor.namespace)
            assert ray.get(supervisor.node_id.remote(), timeout=DEADLINE) == ids[node]
            release.touch()
            for task in tasks:
                assert isinstance(task, RunningTask)
                assert wait_exit(executor, task, DEADLINE).exit_code == 0
                assert "ready" in _log(executor, task)
                restarted = RayExecutor(root, namespace=executor.namespace)
                adopted = restarted.adopt(recorded(task))
                assert adopted is not None and restarted.poll(adopted).exit_code == 0
        # The namespace's named actors are the nodes' supervisors, one per node used.
        assert _named_actors(executor.namespace) == sorted(supervisor_name(node)
                                                           for node in RAY_NODES)
        # A node Ray does not have: nothing starts anywhere else, the attempt is lost.
        nowhere = executor.launch(spec("print('never')", job="nowhere", node="no-such-node"))
        assert nowhere.pid == 0
        assert executor.poll(nowhere).phase is TaskPhase.LOST
    finally:
        ENGINES["ray"].cleanup(root)
    # Teardown ends the supervisors.
    wait_until(lambda: _named_actors(executor.namespace) == [], timeout=DEADLINE)


def test_ray_a_killed_supervisor_leaves_its_task_running_and_a_new_one_adopts_it(
        root: Path, tmp_path: Path) -> None:
    import psutil
    import ray

    from shoal.executors.processes import same_process
    from shoal.executors.ray_engine import RayExecutor, supervisor_name

    executor = ENGINES["ray"].start(root)
    assert isinstance(executor, RayExecutor)
    node = RAY_NODES[0]
    started, release = tmp_path / "started", tmp_path / "release"
    launch = spec(_blocked(started, release, code=3), job="survivor", node=node)
    try:
        task = executor.launch(launch)
        wait_until(lambda: "ready" in _log(executor, task), timeout=DEADLINE)
        supervisor = ray.get_actor(supervisor_name(node), namespace=executor.namespace)
        first = ray.get(supervisor.pid.remote(), timeout=DEADLINE)
        ray.kill(supervisor, no_restart=True)
        wait_until(lambda: not psutil.pid_exists(first)
                   or psutil.Process(first).status() == psutil.STATUS_ZOMBIE, timeout=DEADLINE)
        # Its task runs on (its wrapper is in a session of its own), and polls RUNNING.
        assert same_process(task.pid, task.pid_start_time)
        assert executor.poll(task).phase is TaskPhase.RUNNING
        # Launched again by a restarted control plane: the same attempt, through a new
        # supervisor that found it from the node's records, never a second process.
        restarted = RayExecutor(root, namespace=executor.namespace)
        assert restarted.launch(launch).pid == task.pid
        again = ray.get_actor(supervisor_name(node), namespace=executor.namespace)
        assert ray.get(again.pid.remote(), timeout=DEADLINE) != first
        adopted = restarted.adopt(recorded(task))
        assert adopted is not None and restarted.poll(adopted).phase is TaskPhase.RUNNING
        release.touch()
        assert wait_exit(restarted, adopted, DEADLINE).exit_code == 3
        assert started.read_text() == "x\n"
        assert executor.poll(task).exit_code == 3
    finally:
        ENGINES["ray"].cleanup(root)
