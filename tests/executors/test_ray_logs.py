"""A task's log across the nodes its attempts ran on (`shoal.executors.ray_logs`): first its
logic over real node-local executors standing for the nodes, with a node's death or
silence played by the node-asking function; then the Ray engine on one real multi-node
Ray cluster for the whole module, one of whose nodes dies. Every wait is on a condition;
deadlines are only safety nets."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from executor_support import spec, wait_exit, wait_until
from ray_support import RayNodes, namespace_of

from shoal.executors import ray_logs
from shoal.executors.contract import Executor, LogChunk
from shoal.executors.local import LOG_START_FILE, LocalExecutor
from shoal.executors.ray_logs import GONE, LATE, TaskLogs

#: A safety net only: on a loaded machine a start, or a node's death, can take long.
DEADLINE = 120.0


class Cluster:
    """Nodes as node-local executors over directories of their own, attempts placed on
    them, and what asking a node gives: its answer, or GONE, or LATE."""

    def __init__(self, root: Path, names: tuple[str, ...]) -> None:
        self.nodes = {name: LocalExecutor(root / "nodes" / name) for name in names}
        self.placed: list[tuple[int, str]] = []
        self.directory = root / "placements"
        self.directory.mkdir(parents=True)
        self.gone: set[str] = set()
        self.late: set[str] = set()
        self.asked: list[str] = []

    def run(self, attempt: int, node: str, code: str) -> None:
        self.placed.append((attempt, node))  # the placement is written before the start
        local = self.nodes[node]
        assert wait_exit(local, local.launch(spec(code, attempt=attempt))).exit_code == 0

    def place(self, attempt: int, node: str) -> None:
        self.placed.append((attempt, node))

    def placements(self, job: str, group: str, index: int
                   ) -> tuple[list[tuple[int, str]], Path]:
        return list(self.placed), self.directory

    def ask(self, calls: Mapping[str, tuple[str, tuple[Any, ...]]]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for node, (op, args) in calls.items():
            self.asked.append(node)
            if node in self.gone:
                answers[node] = GONE
            elif node in self.late:
                answers[node] = LATE
            elif op == "log_layout":
                answers[node] = ray_logs.layout(self.nodes[node], *args)
            else:
                answers[node] = ray_logs.read_segment(self.nodes[node], *args)
        return answers


def _read(logs: TaskLogs, offset: int, limit: int = 1 << 20) -> LogChunk:
    return logs.read("job1", "worker", 0, "stdout", offset, limit)


def _follow(read: Any, limit: int = 1 << 20) -> list[tuple[int, bytes]]:
    chunks: list[tuple[int, bytes]] = []
    offset = 0
    while (chunk := read(offset, limit)).data:
        chunks.append((chunk.offset, chunk.data))
        offset = chunk.next_offset
    return chunks


def test_attempts_on_one_node_are_one_read_and_reads_cost_one_node(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "a", "print('one')")
    cluster.run(2, "a", "print('two')")
    cluster.run(3, "b", "print('three')")
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"one\ntwo\n"), (8, b"three\n")]
    # Everything before the latest attempt is measured and kept: one node per read now.
    cluster.asked.clear()
    assert _read(logs, 9).data == b"hree\n"
    assert _read(logs, 2).data == b"e\ntwo\n"
    assert cluster.asked == ["b", "a"]


def test_a_dead_node_loses_its_bytes_but_not_their_offsets(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b", "c"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "a", "print('one')")
    cluster.run(2, "b", "print('two')")
    # Attempt 2 is the latest: a follower reads it (its bytes are seen, not yet measured).
    assert _read(logs, 4) == LogChunk(b"two\n", 4)
    cluster.gone.add("b")  # b dies: its task is retried on c
    assert _read(logs, 4) == LogChunk(b"", 4)  # nothing to skip to yet
    cluster.run(3, "c", "print('three')")
    # What a follower had seen of b keeps its offsets; a read there skips to what follows.
    assert _read(logs, 4) == LogChunk(b"three\n", 8)
    assert _follow(lambda o, n: _read(logs, o, n), 3) == [
        (0, b"one"), (3, b"\n"), (8, b"thr"), (11, b"ee\n")]
    # A restarted control plane (a new reader) keeps them too: they were recorded.
    again = TaskLogs(cluster.placements, cluster.ask)
    assert _read(again, 0) == LogChunk(b"one\n", 0)
    assert _read(again, 5) == LogChunk(b"three\n", 8)


def test_a_segment_never_measured_or_seen_before_its_node_died_is_empty(
        tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "b", "print('lost')")
    cluster.gone.add("b")
    cluster.run(2, "a", "print('two')")
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"two\n")]
    cluster.gone.discard("b")  # its machine back under the same name: nothing moves
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"two\n")]


def test_a_slow_node_gives_nothing_now_and_nothing_is_concluded(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "b", "print('one')")
    cluster.run(2, "a", "print('two')")
    cluster.late.add("b")
    assert _read(logs, 0) == LogChunk(b"", 0)
    assert _read(logs, 4) == LogChunk(b"", 4)  # b's length is not known: nor is this offset
    cluster.late.clear()
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"one\n"), (4, b"two\n")]


def test_an_attempt_not_started_yet_adds_nothing(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "a", "print('one')")
    cluster.place(2, "a")  # placed, its process not started yet
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"one\n")]
    local = cluster.nodes["a"]
    assert wait_exit(local, local.launch(spec("print('two')", attempt=2))).exit_code == 0
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"one\ntwo\n")]


def test_attempts_launched_with_no_start_recorded_are_shown_whole(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ("a", "b"))
    logs = TaskLogs(cluster.placements, cluster.ask)
    cluster.run(1, "a", "print('one')")
    cluster.run(2, "a", "print('two')")
    for start in (tmp_path / "nodes" / "a").rglob(LOG_START_FILE):
        start.unlink()  # as a Shoal that recorded none launched them
    cluster.run(3, "b", "print('three')")
    assert _follow(lambda o, n: _read(logs, o, n)) == [(0, b"one\ntwo\n"), (8, b"three\n")]


# ---- the Ray engine, a node of which dies -------------------------------------------------

_RAY = RayNodes({"logs-head": {}, "logs-a": {}, "logs-b": {}})


@pytest.fixture(scope="module", autouse=True)
def _ray_shutdown() -> Iterator[None]:
    with _RAY:
        yield


def test_ray_keeps_a_moved_task_log_whole_and_its_offsets_when_a_node_dies(
        tmp_path: Path) -> None:
    from shoal.executors.ray_engine import RayExecutor

    _RAY.cluster  # noqa: B018 - started here
    root = tmp_path / "engine"
    executor: Executor = RayExecutor(root, namespace=namespace_of(root), grace_period=1.0)
    try:
        for attempt, (node, word) in enumerate(
                [("logs-a", "one"), ("logs-b", "two"), ("logs-a", "three")], start=1):
            task = executor.launch(spec(f"print({word!r})", attempt=attempt, node=node))
            assert wait_exit(executor, task, DEADLINE).exit_code == 0

        def read(offset: int, limit: int) -> LogChunk:
            return executor.read_log("job1", "worker", 0, "stdout", offset, limit)

        assert b"".join(d for _, d in _follow(read)) == b"one\ntwo\nthree\n"
        assert _follow(read, 2) == [(0, b"on"), (2, b"e\n"), (4, b"tw"), (6, b"o\n"),
                                    (8, b"th"), (10, b"re"), (12, b"e\n")]
        _RAY.remove("logs-b")
        wait_until(lambda: not {n.name: n for n in executor.nodes()}["logs-b"].ready,
                   timeout=DEADLINE)
        # Attempt 3's bytes are where they were; b's are gone, skipped over.
        assert read(8, 1 << 20) == LogChunk(b"three\n", 8)
        assert read(5, 1 << 20) == LogChunk(b"three\n", 8)
        assert _follow(read) == [(0, b"one\n"), (8, b"three\n")]
        restarted = RayExecutor(root, namespace=namespace_of(root), grace_period=1.0)
        assert restarted.read_log("job1", "worker", 0, "stdout", 10, 3) == LogChunk(
            b"ree", 10)
    finally:
        RayExecutor(root, namespace=namespace_of(root), grace_period=1.0).close()
