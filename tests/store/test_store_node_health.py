"""Nodes' conditions (`shoal.store.nodes`): what an engine reports is kept beside what was
declared, written with the nodes that joined in one transaction, on both backends."""

from __future__ import annotations

from dataclasses import replace

from shoal.api import Node, NodePhase, Resources
from shoal.store import Repository
from shoal.store.nodes import REASON_CHARS, NodeCondition, NodeRecord

GPU = Node("gpu-1", Resources.of(cpu=8000, memory=1024, gpu=2), labels={"gpu-type": "fake"})
CPU = Node("cpu-1", Resources.of(cpu=4000, memory=1024))


def test_a_stored_node_is_ready_until_its_engine_says_otherwise(repo: Repository) -> None:
    repo.put_node(GPU)
    repo.put_node(replace(CPU, schedulable=False))
    records = repo.node_records()
    assert records == [NodeRecord(replace(CPU, schedulable=False)), NodeRecord(GPU)]
    assert [r.phase for r in records] == [NodePhase.CORDONED, NodePhase.READY]


def test_conditions_change_and_a_declaration_keeps_them(repo: Repository) -> None:
    repo.put_node(GPU)
    repo.record_nodes([], {"gpu-1": NodeCondition(False, "dead: missed heartbeats")})
    (record,) = repo.node_records()
    assert (record.phase, record.condition.reason) == (NodePhase.NOT_READY,
                                                       "dead: missed heartbeats")
    # PUT /nodes changes what was declared, never what the engine reported.
    bigger = replace(GPU, capacity=Resources.of(cpu=8000, memory=1024, gpu=4))
    repo.put_node(bigger)
    assert repo.node_records() == [NodeRecord(bigger, NodeCondition(False,
                                                                     "dead: missed heartbeats"))]
    repo.record_nodes([], {"gpu-1": NodeCondition(True, "ignored when ready")})
    assert repo.node_records() == [NodeRecord(bigger, NodeCondition(True, ""))]
    assert repo.list_nodes() == [bigger]


def test_joined_nodes_and_conditions_are_one_write(repo: Repository) -> None:
    repo.put_node(CPU)
    repo.record_nodes([GPU], {"gpu-1": NodeCondition(), "cpu-1": NodeCondition(False, "x"),
                              "ghost": NodeCondition(False, "never stored")})
    assert repo.node_records() == [NodeRecord(CPU, NodeCondition(False, "x")),
                                   NodeRecord(GPU)]


def test_a_long_reason_is_bounded(repo: Repository) -> None:
    repo.put_node(GPU)
    repo.record_nodes([], {"gpu-1": NodeCondition(False, "y" * 10_000)})
    assert len(repo.node_records()[0].condition.reason) == REASON_CHARS

