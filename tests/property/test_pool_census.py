"""A pool's census (issue 18) says what a node-by-node count says, after any changes.

Random clusters (GPU and CPU-only nodes, some with a task limit, some with virtual nodes
carved out of them) go through random takes and gives — tasks on physical and on virtual
nodes, undone statements, carving and giving back virtual nodes, the CPU reserve per idle
GPU switched on and off, nodes cordoned and brought back — and after each step, for every
request shape asked about so far, the census read through `fitting.diagnose` equals
`fitting.count_nodes`, which counts every node of the pool as it is; for every GPU count
asked about so far (so that the kept answer is the one read, across steps),
`NodePool.gpu_slots` (kept between bucket moves) equals the sum over the pool's nodes worked
out afresh; and every node's `first_short` (read without building its free vector) equals
the first dimension of `Resources.shortfall` of its `free_for`, the path it replaces.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources
from shoal.core.nodes import ClusterState, NodePool, NodeState
from shoal.scheduler.fitting import Diagnosis, count_nodes, diagnose

REQUESTS = [
    Resources.of(gpu=1, cpu=1_000, memory=1_000),
    Resources.of(gpu=2, cpu=4_000, memory=8_000),
    Resources.of(gpu=4, cpu=2_000, memory=4_000),
    Resources.of(gpu=8, cpu=500, memory=500),
    Resources.of(cpu=2_000, memory=2_000),
    Resources.of(cpu=6_000),
    Resources.of(memory=30_000),
    Resources.of(cpu=1_000, extras={"rdma": 1}),
]

node_specs = st.lists(
    st.tuples(st.sampled_from([0, 2, 4, 8]), st.sampled_from([8_000, 16_000]),
              st.sampled_from([None, 2, 3]), st.sampled_from([0, 1]),
              st.sampled_from(["a", "b"])),
    min_size=1, max_size=8)

steps = st.lists(
    st.tuples(st.sampled_from(["take", "give", "undo", "carve", "uncarve", "virtual",
                               "reserve", "cordon", "ask"]),
              st.integers(0, 20), st.integers(0, len(REQUESTS) - 1)),
    min_size=1, max_size=40)


def _node(i: int, gpu: int, cpu: int, pods: int | None, rdma: int, kind: str) -> Node:
    extras = {"pods": pods} if pods is not None else {}
    if rdma:
        extras["rdma"] = rdma
    return Node(f"n{i}", Resources.of(cpu=cpu, memory=64_000, gpu=gpu, extras=extras),
                {"kind": kind})


def _fresh_slots(pool: NodePool, gpu: int) -> int:
    return sum(s.gpu // gpu for s in pool.nodes if s.allocatable.gpu and s.gpu >= gpu)


def _first_short(state: NodeState, request: Resources) -> str | None:
    short = request.shortfall(state.free_for(request))
    return short[0] if short else None


@settings(max_examples=120, deadline=None)
@given(node_specs, steps)
def test_census_equals_a_fresh_count(specs: list[tuple[int, int, int | None, int, str]],
                                     script: list[tuple[str, int, int]]) -> None:
    cluster = ClusterState([_node(i, *spec) for i, spec in enumerate(specs)])
    taken: list[tuple[NodeState, Resources, tuple[int, ...]]] = []
    carved: list[NodeState] = []
    asked: set[tuple[str, int]] = set()
    asked_slots: set[tuple[str, int]] = set()

    def pool(kind: str) -> NodePool:
        return cluster.pool(kind, lambda node: node.labels["kind"] == kind)

    for action, pick, which in script:
        request = REQUESTS[which]
        states = cluster.states
        if action in ("take", "virtual"):
            targets = carved if action == "virtual" else states
            if targets:
                state = targets[pick % len(targets)]
                if state.fits(request):
                    taken.append((state, request, cluster.take(state, request)))
        elif action in ("give", "undo") and taken:
            state, request, gpus = taken.pop(pick % len(taken))
            cluster.give(state, request, gpus, undo=action == "undo")
        elif action == "carve":
            host = states[pick % len(states)]
            size = Resources.of(cpu=2_000, memory=4_000, gpu=min(2, host.gpu))
            if host.fits(size) and host.gpu_free_mask.bit_count() >= size.gpu:
                carved.append(cluster.carve(f"v{len(cluster.virtual)}-{pick}", host, size,
                                            {}, "team"))
        elif action == "uncarve" and carved:
            state = carved[pick % len(carved)]
            if all(t[0] is not state for t in taken):
                carved.remove(state)
                cluster.uncarve(state)
        elif action == "reserve":
            cluster.set_cpu_reserve(0 if cluster.cpu_reserve else 1_000 * (1 + pick % 2))
        elif action == "cordon":
            name = states[pick % len(states)].name
            cluster.set_cordoned(name, name not in cluster.cordoned)
        else:
            asked.add(("ab"[pick % 2], which))
            asked_slots.add(("ab"[pick % 2], 1 + pick % 8))
        for kind, index in sorted(asked):
            shape = REQUESTS[index]
            here = pool(kind)
            assert diagnose(here, shape, 3) == count_nodes(here, shape, 3)
        for kind, gpu in sorted(asked_slots):
            here = pool(kind)
            assert here.gpu_slots(gpu) == _fresh_slots(here, gpu), (kind, gpu)
        for state in (*cluster.states, *carved):
            for shape in REQUESTS:
                assert state.first_short(shape) == _first_short(state, shape)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(["cpu", "memory", "gpu", "pods", "rdma"]),
                       st.integers(1, 5)))
def test_a_diagnosis_names_the_dimension_most_nodes_lack(short: dict[str, int]) -> None:
    main = Diagnosis(0, short).main
    assert main == (max(short, key=lambda d: (short[d], d)) if short else None)
