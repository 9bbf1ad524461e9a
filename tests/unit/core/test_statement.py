"""Statements: tentative operations, discarded or committed as a whole."""

import pytest

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.session import Session


def session() -> Session:
    nodes = (Node("n0", Resources.of(cpu=8000, gpu=4)),)
    job = Job("j", (TaskGroup("w", 2, Resources.of(cpu=1000, gpu=2)),),
              scheduler_name=SchedulerName.SHOAL)
    return Session(Snapshot(nodes, (job,)), Profile.default().plugins())


def test_discard_restores_nodes_quota_and_pending() -> None:
    s = session()
    node = s.cluster.by_name["n0"]
    stmt = s.statement()
    stmt.allocate(TaskRef("j", "w", 0), "default", node, Resources.of(cpu=1000, gpu=2))
    assert node.gpu == 2 and s.quota.get("default").usage.gpu == 2
    assert list(s.jobs["j"].pending["w"]) == [1]
    stmt.discard()
    assert (node.cpu, node.gpu, node.gpu_free_mask) == (8000, 4, 0b1111)
    assert s.quota.root.usage == Resources()
    assert list(s.jobs["j"].pending["w"]) == [0, 1]
    assert s.decisions.binds == []


def test_commit_records_binds_with_gpu_indices() -> None:
    s = session()
    node = s.cluster.by_name["n0"]
    stmt = s.statement()
    for i in range(2):
        stmt.allocate(TaskRef("j", "w", i), "default", node, Resources.of(cpu=1000, gpu=2))
    stmt.commit()
    assert [(str(b.task), b.gpus) for b in s.decisions.binds] == [
        ("j/w/0", (0, 1)), ("j/w/1", (2, 3))]
    assert s.jobs["j"].holding == 2


def test_statement_cannot_be_reused() -> None:
    s = session()
    stmt = s.statement()
    stmt.commit()
    with pytest.raises(RuntimeError):
        stmt.discard()


def test_roll_back_undoes_only_what_followed_its_savepoint() -> None:
    s = session()
    node = s.cluster.by_name["n0"]
    request = Resources.of(cpu=1000, gpu=2)
    stmt = s.statement()
    stmt.allocate(TaskRef("j", "w", 0), "default", node, request)
    mark = stmt.savepoint()
    stmt.allocate(TaskRef("j", "w", 1), "default", node, request)
    assert [op.task.index for op in stmt.operations_since(mark)] == [1]
    stmt.roll_back(mark)
    assert (node.gpu, node.gpu_free_mask) == (2, 0b1100)
    assert s.quota.get("default").usage.gpu == 2
    assert list(s.jobs["j"].pending["w"]) == [1]
    stmt.commit()  # still open: what came before the savepoint is decided
    assert [str(b.task) for b in s.decisions.binds] == ["j/w/0"]
