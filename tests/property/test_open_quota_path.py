"""A class's probe asks the quota tree only where more than its root may refuse (issue 18).

`shoal.scheduler.actions.allocate.class_refusal` skips `QuotaTree.check` for a request the
root's free capacity holds when the virtual cluster's path is open (`QuotaTree.is_open_path`: no
guarantee owed anywhere, no `max` or borrowing ceiling below the root). On random trees with
random charges and refunds, wherever the path is open the check must say exactly what the
root says — lent or not — and the cached walk (`open_path`) what the plain one says.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import ROOT_QUEUE, ResourceLimit, Resources, VirtualCluster
from shoal.core import QuotaTree
from shoal.scheduler.actions.allocate import open_path

from .strategies import vc_trees

capacities = st.builds(Resources.of, cpu=st.integers(0, 64000),
                       memory=st.integers(0, 262144), gpu=st.integers(0, 16))
requests = st.builds(Resources.of, cpu=st.sampled_from([0, 500, 4000, 16000]),
                     memory=st.sampled_from([0, 1024, 65536]), gpu=st.integers(0, 8))


@st.composite
def trees(draw: st.DrawFn) -> tuple[Resources, tuple[VirtualCluster, ...]]:
    capacity = draw(capacities)
    vcs = draw(vc_trees(capacity, limits=True))
    if draw(st.booleans()):  # no guarantees, or the path is seldom open
        vcs = tuple(replace(vc, min=Resources()) for vc in vcs)
    return capacity, vcs


@settings(max_examples=80, deadline=None)
@given(case=trees(), charges=st.lists(st.tuples(st.integers(0, 10), requests, st.booleans()),
                                      max_size=12),
       probe=requests, lend=st.booleans())
def test_an_open_path_refuses_only_at_the_root(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        charges: list[tuple[int, Resources, bool]], probe: Resources, lend: bool) -> None:
    capacity, vcs = case
    tree = QuotaTree(vcs, capacity)
    names = sorted(q.name for q in tree if q.name != ROOT_QUEUE)
    charged: dict[str, list[Resources]] = {}
    for pick, request, refund in [(0, Resources(), False), *charges]:
        name = names[pick % len(names)]
        outstanding = charged.setdefault(name, [])
        if refund and outstanding:
            tree.refund(name, outstanding.pop())
        else:
            tree.charge(name, request)
            outstanding.append(request)
        room = tree.capacity.saturating_sub(tree.root.usage)
        for queue in names:
            if not tree.is_open_path(queue):
                continue
            reason = tree.check(queue, probe, lend)
            assert (reason is None) is probe.fits(room), \
                f"check({queue}, {probe}, lend={lend}) = {reason}; root has {room} free"
            if reason is not None:
                assert reason.queue is None and reason.resource == probe.shortfall(room)[0]
            event("open path, refused" if reason is not None else "open path, allowed")



@settings(max_examples=60, deadline=None)
@given(case=trees(), steps=st.lists(st.tuples(
    st.sampled_from(["charge", "refund", "carve", "swap"]), st.integers(0, 10),
    requests, st.builds(ResourceLimit.of, st.fixed_dictionaries({"gpu": st.integers(0, 8)}))),
    max_size=12))
def test_the_kept_open_paths_follow_the_tree(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        steps: list[tuple[str, int, Resources, ResourceLimit]]) -> None:
    """`open_path` keeps what it read of the tree's layout across cycles (in the profile's
    derived state): after every change to usage or layout — a virtual cluster gone and
    back under its name with a `max` where it had none, or none where it had one, among
    them — it says what the plain rule says."""
    capacity, vcs = case
    tree = QuotaTree(vcs, capacity)
    session = SimpleNamespace(quota=tree, hooks=SimpleNamespace(derived={}))
    charged: dict[str, list[Resources]] = {}
    for step, pick, request, limit in steps:
        names = sorted(q.name for q in tree if q.name != ROOT_QUEUE)
        name = names[pick % len(names)]
        outstanding = charged.setdefault(name, [])
        swapped = f"swapped-{pick % 2}"
        if step == "refund" and outstanding:
            tree.refund(name, outstanding.pop())
        elif step == "carve" and request.fits(tree.headroom(name)):
            tree.carve(name, request)
        elif step == "swap" and swapped not in names:
            tree.add(VirtualCluster(swapped, max=limit))
        elif step == "swap" and not charged.get(swapped) and tree.get(swapped).carved.is_zero():
            limited = not tree.get(swapped).max.is_unlimited()
            tree.remove(swapped)
            tree.add(VirtualCluster(swapped) if limited else VirtualCluster(swapped, max=limit))
        else:
            tree.charge(name, request)
            outstanding.append(request)
        for queue in sorted(q.name for q in tree if q.name != ROOT_QUEUE):
            assert open_path(session, queue) is tree.is_open_path(queue), (step, queue)  # type: ignore[arg-type]
