"""The free GPUs per set of node pools the preempt action keeps from one cycle to the next
(issue 18, `ShortSearches._free_counts`) are those a count node by node gives now.

A random cluster (nodes of two kinds, GPU and CPU-only) goes through random statements —
placements and evictions, each committed, discarded or rolled back to a savepoint first —
and between them through what happens between cycles: tasks ending (capacity given back),
binds applied, nodes cordoned and brought back, virtual nodes carved and given back. At
every point between statements (where the action reads them), the kept count of each set
of pools, read through the same kept state all along, equals a fresh sum over its nodes
as they stand; the kept path is also checked to have been taken (a repeated stamp reuses
the count instead of summing again).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources
from shoal.api.objects import TaskRef
from shoal.core.nodes import ClusterState, NodeState
from shoal.core.statement import Allocation, Eviction, Statement
from shoal.scheduler.actions.short_searches import ShortSearches
from shoal.scheduler.preemptor_class import PreemptorClasses

REQUESTS = [
    Resources.of(gpu=1, cpu=1_000, memory=1_000),
    Resources.of(gpu=2, cpu=2_000, memory=2_000),
    Resources.of(gpu=4, cpu=2_000, memory=4_000),
    Resources.of(cpu=2_000, memory=2_000),
]

node_specs = st.lists(st.tuples(st.sampled_from([0, 4, 8]), st.sampled_from(["a", "b"])),
                      min_size=1, max_size=8)

steps = st.lists(
    st.tuples(st.sampled_from(["statement", "end", "bind", "cordon", "carve", "uncarve",
                               "read"]),
              st.lists(st.tuples(st.booleans(), st.integers(0, 30),
                                 st.integers(0, len(REQUESTS) - 1)), max_size=5),
              st.sampled_from(["commit", "discard", "roll back"]), st.integers(0, 30)),
    min_size=1, max_size=30)


class _Ledger:
    def allocated(self, allocation: Any) -> None: ...
    def unallocated(self, allocation: Any) -> None: ...
    def evicted(self, eviction: Any) -> None: ...
    def unevicted(self, eviction: Any) -> None: ...
    def committed(self, operations: Any) -> None: ...


class _Quota:
    def charge(self, queue: str, request: Resources) -> None: ...
    def refund(self, queue: str, request: Resources) -> None: ...


def _searches(cluster: ClusterState, classes: PreemptorClasses) -> Any:
    """What `ShortSearches._free_on` reads of an execution: one per cycle, over the same
    kept classes."""
    searches = SimpleNamespace(session=SimpleNamespace(cluster=cluster, model="m", hooks="h"),
                               classes=classes, carries=True)
    searches._free_counts = lambda: ShortSearches._free_counts(searches)  # type: ignore
    return searches


@settings(max_examples=80, deadline=None)
@given(node_specs, steps)
def test_kept_free_counts_equal_a_fresh_count(specs: list[tuple[int, str]],
                                              script: list[Any]) -> None:
    cluster = ClusterState([
        Node(f"n{i}", Resources.of(cpu=16_000, memory=64_000, gpu=gpu), {"kind": kind})
        for i, (gpu, kind) in enumerate(specs)])
    classes = PreemptorClasses()
    running: list[tuple[NodeState, Resources, tuple[int, ...]]] = []
    carved: list[NodeState] = []
    reused = 0

    def pools() -> dict[Any, set[int]]:
        found: dict[Any, set[int]] = {}
        for kind in "ab":
            pool = cluster.pool(kind, lambda node, k=kind: node.labels["kind"] == k)
            found[(kind,)] = {s.ordinal for s in pool.nodes}
        found[("a", "b")] = found[("a",)] | found[("b",)]
        return found

    for action, operations, end, pick in script:
        states = cluster.states
        if action == "statement":
            statement = Statement(cluster, _Quota(), _Ledger())  # type: ignore[arg-type]
            mark = None
            taken: set[int] = set()
            for at, (place, which, index) in enumerate(operations):
                if at == 1:
                    mark = statement.savepoint()
                request = REQUESTS[index]
                if place:
                    state = states[which % len(states)]
                    if state.fits(request):
                        statement.allocate(TaskRef("j", "g", at), "q", state, request)
                elif running and which % len(running) not in taken:
                    taken.add(which % len(running))
                    state, request, gpus = running[which % len(running)]
                    statement.evict(TaskRef("v", "g", which % len(running)), "q", state,
                                    request, gpus, "r")
            if end == "discard":
                statement.discard()
            else:
                if end == "roll back" and mark is not None:
                    statement.roll_back(mark)
                done = statement.commit()
                gone = {op.task.index for op in done if isinstance(op, Eviction)}
                running = [r for i, r in enumerate(running) if i not in gone] + [
                    (op.node, op.request, op.gpus) for op in done
                    if isinstance(op, Allocation)]
        elif action == "end" and running:
            state, request, gpus = running.pop(pick % len(running))
            cluster.give(state, request, gpus)
        elif action == "bind":
            state = states[pick % len(states)]
            request = REQUESTS[pick % len(REQUESTS)]
            if state.fits(request):
                running.append((state, request, cluster.take(state, request)))
        elif action == "cordon":
            name = states[pick % len(states)].name
            cluster.set_cordoned(name, name not in cluster.cordoned)
        elif action == "carve":
            host = states[pick % len(states)]
            size = Resources.of(cpu=2_000, memory=4_000, gpu=min(2, host.gpu))
            if host.fits(size) and host.gpu_free_mask.bit_count() >= size.gpu:
                carved.append(cluster.carve(f"v{pick}-{len(carved)}", host, size, {}, "t"))
        elif action == "uncarve" and carved:
            cluster.uncarve(carved.pop(pick % len(carved)))
        searches = _searches(cluster, classes)
        for key, nodes in pools().items():
            counted = classes.free_counted
            before = None if counted is None else counted.counts.get(key)
            free = ShortSearches._free_on(searches, key, nodes)
            assert free == sum(states[n].gpu for n in nodes), (action, key)
            if before is not None and classes.free_counted is counted:
                reused += 1
    event(f"counts reused: {min(reused, 3)}+")
