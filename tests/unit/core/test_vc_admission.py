"""`vc_problem` judges a replaced virtual cluster as a parent of its stored children, and
judges the tree even before any node is known (only the root's capacity needs nodes)."""

from __future__ import annotations

from shoal.api import Node, ResourceLimit, Resources, VirtualCluster
from shoal.core.vc_admission import VirtualClusterProblem, vc_problem


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


STORED = [VirtualCluster("dept", min=gpu(8), max=ResourceLimit.of({"gpu": 12})),
          VirtualCluster("vision", parent="dept", min=gpu(6)),
          VirtualCluster("speech", parent="dept", min=gpu(2))]
NODES = [Node("n0", Resources.of(cpu=64000, memory=512 * 1024, gpu=8)),
         Node("n1", Resources.of(cpu=64000, memory=512 * 1024, gpu=8))]


def _replacing(vc: VirtualCluster, nodes: list[Node] | None = NODES
               ) -> VirtualClusterProblem | None:
    return vc_problem([vc], [v for v in STORED if v.name != vc.name], nodes)


def test_the_stored_tree_is_sound() -> None:
    assert _replacing(STORED[0]) is None
    assert _replacing(STORED[0], None) is None


def test_a_parent_replaced_below_its_childrens_minimums_is_refused() -> None:
    for nodes in (NODES, None):
        problem = _replacing(VirtualCluster("dept", min=gpu(7), max=ResourceLimit.of(
            {"gpu": 12})), nodes)
        assert problem is not None
        assert (problem.name, problem.path) == ("dept", "spec.flexibleResourceMin")


def test_a_parent_capped_below_a_childs_guarantee_is_refused_at_its_maximum() -> None:
    problem = _replacing(VirtualCluster("dept", max=ResourceLimit.of({"gpu": 4})))
    assert problem is not None
    assert (problem.name, problem.path) == ("dept", "spec.flexibleResourceMax")
    assert "'vision'" in problem.message and "gpu 6 > 4" in problem.message


def test_without_nodes_the_root_is_not_judged() -> None:
    huge = VirtualCluster("huge", min=gpu(100))
    assert vc_problem([huge], STORED, None) is None
    problem = vc_problem([huge], STORED, NODES)
    assert problem is not None and problem.name == "huge"
