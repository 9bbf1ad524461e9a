"""Mapping trace queues and users onto virtual clusters."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.api import Resources, VirtualCluster
from shoal.sim.loaders import load_philly, map_queues, queues_as_virtual_clusters
from shoal.sim.trace import Trace, TraceError, TraceJob


def _trace() -> Trace:
    return Trace.of([
        TraceJob("a", 0.0, 10.0, 1, Resources(gpu=1), queue="q1", user="alice"),
        TraceJob("b", 1.0, 10.0, 1, Resources(gpu=1), queue="q2", user="bob"),
        TraceJob("c", 2.0, 10.0, 1, Resources(gpu=1), queue="q3"),
    ], "t.csv", skip_reasons={"why": 2})


def test_map_by_queue_with_fallback() -> None:
    mapped = map_queues(_trace(), {"q1": "vision", "*": "default"})
    assert [j.queue for j in mapped.jobs] == ["vision", "default", "default"]
    assert (mapped.source, mapped.skipped, mapped.skip_reasons) == ("t.csv", 2, {"why": 2})
    assert [j.name for j in mapped.jobs] == ["a", "b", "c"]


def test_map_by_user() -> None:
    mapped = map_queues(_trace(), {"alice": "vision", "bob": "nlp", "": "shared"}, by="user")
    assert [j.queue for j in mapped.jobs] == ["vision", "nlp", "shared"]


def test_unknown_values_without_fallback_are_listed() -> None:
    with pytest.raises(TraceError) as caught:
        map_queues(_trace(), {"q1": "vision"})
    assert str(caught.value) == ("t.csv: column 'queue': the queue rule names no virtual "
                                 "cluster for 'q2', 'q3' and has no '*' fallback")


@pytest.mark.parametrize("target", ["root", "not a name", ""])
def test_rule_targets_must_be_virtual_cluster_names(target: str) -> None:
    with pytest.raises(TraceError, match="not a virtual cluster name"):
        map_queues(_trace(), {"q1": target, "*": "default"})


def test_queues_as_virtual_clusters(examples: Path) -> None:
    trace = load_philly(examples / "philly-sample.csv")
    vcs = queues_as_virtual_clusters(trace)
    assert [vc.name for vc in vcs] == ["103959", "11cb48", "6214e9", "6c71a0", "ee9e8c"]
    assert vcs[0] == VirtualCluster("103959")
    assert vcs[0].min.is_zero() and vcs[0].max.is_unlimited()
    declared = queues_as_virtual_clusters(trace, declared=[VirtualCluster("6214e9"), "11cb48"])
    assert [vc.name for vc in declared] == ["103959", "6c71a0", "ee9e8c"]
    defaulted = map_queues(trace, {"*": "default"})
    assert queues_as_virtual_clusters(defaulted) == ()
