"""The placement score spelt out per dimension (thirteenth round) is, float for float, the
loop over (GPU, CPU, memory) it replaced: the highest-scored node, ties included, is the
same one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources
from shoal.core.nodes import ClusterState, NodeState
from shoal.scheduler.plugins.placement import (
    WEIGHTS,
    Placement,
    PlacementArguments,
    Strategy,
)


def _loop_score(strategy: Strategy, request: Resources, node: NodeState) -> float:
    alloc = node.allocatable
    score = weight = 0.0
    for dim, free, cap, need in (("gpu", node.gpu, alloc.gpu, request.gpu),
                                 ("cpu", node.cpu, alloc.cpu, request.cpu),
                                 ("memory", node.memory, alloc.memory, request.memory)):
        if cap <= 0:
            continue
        w = WEIGHTS[dim]
        used_after = (cap - free + need) / cap
        score += w * (used_after if strategy is Strategy.BINPACK else 1.0 - used_after)
        weight += w
    return score / weight if weight else 0.0


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(Strategy)), st.integers(0, 8), st.integers(0, 96_000),
       st.integers(0, 512_000), st.integers(0, 8), st.integers(0, 48_000),
       st.integers(0, 256_000))
def test_spelt_out_score_is_the_loops(strategy: Strategy, gpu: int, cpu: int, memory: int,
                                      want_gpu: int, want_cpu: int, want_memory: int) -> None:
    node = ClusterState([Node("n", Resources.of(cpu=cpu, memory=memory, gpu=gpu))]).states[0]
    taken = Resources.of(cpu=cpu // 3, memory=memory // 5, gpu=gpu // 2)
    request = Resources.of(cpu=want_cpu, memory=want_memory, gpu=want_gpu)
    plugin = Placement(PlacementArguments(strategy=strategy))
    for _ in range(2):  # idle, then with some of it taken
        assert plugin.node_score(request, node) == _loop_score(strategy, request, node)
        node.cpu -= taken.cpu
        node.memory -= taken.memory
        node.gpu -= taken.gpu
