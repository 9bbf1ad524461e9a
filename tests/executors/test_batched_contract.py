"""Batches of the executor contract (`launch_many`, `poll_many`), checked against every engine
with real processes: a batch is its launches and polls one by one, with the same guarantees
per attempt. Like `test_executor_contract.py`, the Ray engine runs against one real
multi-node Ray cluster started on this machine for the whole module (a head and a worker,
`ray.cluster_utils.Cluster`), shut down at the module's end. Every wait is on a condition
(every task of a batch ended, a line written); deadlines are only safety nets."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from engine_support import Engine, engines
from executor_support import recorded, spec, wait_until
from ray_support import RayNodes

from shoal.executors.contract import Executor, RecordedAttempt
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase, TaskStatus

#: A safety net only: on a loaded machine a batch of actors takes seconds to start.
DEADLINE = 120.0
GRACE = 1.0
#: Tasks in a batch: a few per node.
BATCH = 6


_RAY = RayNodes({"ray-head": {}, "ray-worker": {}})
RAY_NODES = ("ray-worker", "ray-head")
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


def _counts_starts(started: Path, release: Path | None, code: int) -> str:
    """A task that counts its starts in `started`, says "ready", and exits with `code` (once
    `release` exists, when given; after two minutes should a test fail before that)."""
    wait = "" if release is None else (
        f"end = time.monotonic() + 120\n"
        f"while not os.path.exists({str(release)!r}) and time.monotonic() < end:\n"
        f"    time.sleep(0.01)\n")
    return (f"import os, sys, time\n"
            f"open({str(started)!r}, 'a').write('x\\n')\n"
            f"print('ready', flush=True)\n"
            f"{wait}"
            f"sys.exit({code})\n")


def _batch(engine: Engine, tmp_path: Path, *, release: Path | None = None,
           job: str = "batch") -> list[TaskLaunch]:
    """BATCH tasks of one job, on the engine's nodes in turn; task i exits with code i."""
    return [spec(_counts_starts(tmp_path / f"started-{i}", release, i), job=job, index=i,
                 node=engine.nodes[i % len(engine.nodes)])
            for i in range(BATCH)]


def _handles(results: Sequence[RunningTask | BaseException]) -> list[RunningTask]:
    assert all(isinstance(r, RunningTask) for r in results), results
    return [r for r in results if isinstance(r, RunningTask)]


def _until_ended(executor: Executor, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
    """Poll the batch together until none of it runs; its statuses then."""
    polled: list[TaskStatus] = []

    def ended() -> bool:
        polled[:] = executor.poll_many(tasks)
        return len(polled) == len(tasks) and not any(s.running for s in polled)

    wait_until(ended, timeout=DEADLINE)
    return polled


def _log(executor: Executor, task: RunningTask) -> str:
    return executor.read_log(task.job, task.group, task.index, "stdout", 0, 1 << 20
                             ).data.decode()


def test_a_batch_starts_each_attempt_once_and_each_polls_to_its_outcome(
        engine: Engine, root: Path, tmp_path: Path) -> None:
    executor = engine.start(root)
    specs = _batch(engine, tmp_path)
    tasks = _handles(executor.launch_many(specs))
    # One handle per spec, in order, each a started process.
    assert [(t.job, t.index, t.attempt) for t in tasks] == [(s.job, s.index, s.attempt)
                                                             for s in specs]
    assert all(t.pid > 0 for t in tasks)
    statuses = _until_ended(executor, tasks)
    assert [(s.phase, s.exit_code) for s in statuses] == [(TaskPhase.EXITED, i)
                                                          for i in range(BATCH)]
    assert [(tmp_path / f"started-{i}").read_text() for i in range(BATCH)] == ["x\n"] * BATCH
    assert all(_log(executor, t) == "ready\n" for t in tasks)
    # The outcomes are durable: polled again, and by a restarted engine (whose first
    # answers may be late, so RUNNING, until its nodes answer).
    assert executor.poll_many(tasks) == statuses
    assert _until_ended(engine.start(root), tasks) == statuses


def test_a_batch_launched_again_starts_nothing_new(engine: Engine, root: Path,
                                                   tmp_path: Path) -> None:
    release = tmp_path / "release"
    executor = engine.start(root)
    specs = _batch(engine, tmp_path, release=release)
    first = _handles(executor.launch_many(specs))
    again = _handles(executor.launch_many(specs))
    # A control plane that crashed between the store's binds and the launches launches the
    # whole batch again; a batch may also name one attempt twice.
    after_restart = _handles(engine.start(root).launch_many([*specs, specs[0]]))
    pids = [t.pid for t in first]
    assert all(pid > 0 for pid in pids)
    assert [t.pid for t in again] == pids
    assert [t.pid for t in after_restart] == [*pids, pids[0]]
    wait_until(lambda: all("ready" in _log(executor, t) for t in first), timeout=DEADLINE)
    release.touch()
    statuses = _until_ended(executor, first)
    assert [s.exit_code for s in statuses] == list(range(BATCH))
    assert [(tmp_path / f"started-{i}").read_text() for i in range(BATCH)] == ["x\n"] * BATCH
    # Launched again once ended, the batch still starts nothing: each gets its attempt back.
    relauncher = engine.start(root)
    ended = _handles(relauncher.launch_many(specs))
    assert [t.pid for t in ended] == pids
    assert [s.exit_code for s in _until_ended(relauncher, ended)] == list(range(BATCH))
    assert [(tmp_path / f"started-{i}").read_text() for i in range(BATCH)] == ["x\n"] * BATCH


def test_a_spec_that_can_never_run_is_its_result_and_the_others_launch(
        engine: Engine, root: Path, tmp_path: Path) -> None:
    executor = engine.start(root)
    good = _batch(engine, tmp_path)[:2]
    results = executor.launch_many([good[0], replace(good[1], command=()),
                                    replace(good[1], job="no/such/job"), good[1]])
    assert isinstance(results[1], ValueError) and isinstance(results[2], ValueError)
    tasks = _handles([results[0], results[3]])
    assert [s.exit_code for s in _until_ended(executor, tasks)] == [0, 1]
    assert not (root / "placements" / "no").exists()  # nothing was claimed for it


def test_poll_many_answers_as_poll_does(engine: Engine, root: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    executor = engine.start(root)
    done, running = _handles(executor.launch_many([
        spec("import sys; sys.exit(3)", job="done", node=engine.nodes[0]),
        spec(_counts_starts(tmp_path / "started", release, 0), job="running",
             node=engine.nodes[-1])]))
    _until_ended(executor, [done])
    wait_until(lambda: "ready" in _log(executor, running), timeout=DEADLINE)
    never = executor.recorded(RecordedAttempt("never", "worker", 0, 0, 0, 0.0))
    tasks = [done, running, never, done]
    together = executor.poll_many(tasks)
    assert together == [executor.poll(task) for task in tasks]
    assert [s.phase for s in together] == [TaskPhase.EXITED, TaskPhase.RUNNING,
                                           TaskPhase.LOST, TaskPhase.EXITED]
    # A restarted engine, which has seen nothing yet, answers the same once its nodes
    # answered (until then a late answer is RUNNING).
    restarted = engine.start(root)
    adopted = [restarted.adopt(recorded(task)) or task for task in tasks]
    wait_until(lambda: not restarted.poll_many(adopted)[0].running, timeout=DEADLINE)
    assert restarted.poll_many(adopted) == [restarted.poll(t) for t in adopted] == together
    release.touch()
    assert [s.exit_code for s in _until_ended(executor, [running])] == [0]


def test_a_batch_launches_on_another_thread_while_polls_go_on(engine: Engine, root: Path,
                                                              tmp_path: Path) -> None:
    # The control loop hands a cycle's batch to a launch worker of its own and goes on
    # polling and listing nodes meanwhile.
    release = tmp_path / "release"
    executor = engine.start(root)
    (running,) = _handles(executor.launch_many([spec(
        _counts_starts(tmp_path / "started-running", release, 0), job="running",
        node=engine.nodes[0])]))
    polled: list[TaskStatus] = []

    def served_until_launched() -> bool:
        polled.extend(executor.poll_many([running]))
        assert sorted(n.name for n in executor.nodes()) == sorted(engine.nodes)
        return flight.done()

    with ThreadPoolExecutor(max_workers=1) as worker:
        flight = worker.submit(executor.launch_many, _batch(engine, tmp_path))
        wait_until(served_until_launched, timeout=DEADLINE)
        tasks = _handles(flight.result())
    assert polled and all(s.running for s in polled)  # it waits for `release`
    assert all(t.pid > 0 for t in tasks)
    release.touch()
    statuses = _until_ended(executor, [*tasks, running])
    assert [s.exit_code for s in statuses] == [*range(BATCH), 0]
    assert [(tmp_path / f"started-{i}").read_text() for i in range(BATCH)] == ["x\n"] * BATCH


# ---- what only the Ray engine can show ----------------------------------------------------


def test_ray_a_batch_spec_on_a_node_ray_does_not_know_is_lost_and_the_others_run(
        root: Path, tmp_path: Path) -> None:
    import ray

    from shoal.executors.ray_engine import RayExecutor, supervisor_name

    executor = ENGINES["ray"].start(root)
    assert isinstance(executor, RayExecutor)
    try:
        specs = _batch(ENGINES["ray"], tmp_path)[:3]
        specs[1] = replace(specs[1], node="no-such-node")
        results = executor.launch_many(specs)
        nowhere = results[1]
        assert isinstance(nowhere, RunningTask) and nowhere.pid == 0
        tasks = _handles([results[0], results[2]])
        assert all(t.pid > 0 for t in tasks)
        statuses = _until_ended(executor, [*tasks, nowhere])
        assert [(s.phase, s.exit_code) for s in statuses] == [
            (TaskPhase.EXITED, 0), (TaskPhase.EXITED, 2), (TaskPhase.LOST, None)]
        assert not (tmp_path / "started-1").exists()  # it started nowhere else
        # Both attempts went through their node's one supervisor: the namespace's only
        # named actor (no actor per attempt, none for the unknown node).
        named = [str(entry["name"]) for entry in ray.util.list_named_actors(all_namespaces=True)
                 if entry["namespace"] == executor.namespace]
        assert named == [supervisor_name(specs[0].node)]
    finally:
        ENGINES["ray"].cleanup(root)
