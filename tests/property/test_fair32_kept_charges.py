"""The `fairshare` profile's kept state (issue 18, fifteenth round), each path run in lockstep
with the plain one it replaces:

1. Usage charges read each job's kept per-second rates (`shoal.scheduler.usage_rates`,
   `UsageLedger.charged_rates`): on random worlds whose jobs start, end, lose tasks, get a
   new spec, change user and arrive between charges, every charge leaves the same ledger,
   to the last bit and in the same entry order, as the per-task `Holding` arithmetic the
   ledger used before (`charge` over `Used.of`, kept below as the reference).
2. Proportional reclaim answers a preemptor with the listing an earlier one of the same
   terms got since the last commit (`ProportionalReclamation.keeps_listings`): cycles of
   the `fairshare` profile, kept across cycles on random crowded worlds, decide the same
   binds, evictions, resizes and reasons as listing every preemptor afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import (
    Job,
    Node,
    PriorityClass,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.core import Snapshot
from shoal.core.usage import Holding, UsageKey, UsageLedger, Used
from shoal.scheduler import Profile
from shoal.scheduler.actions.reclaim_proportional import ProportionalReclamation
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.usage_rates import UsageRates

from .lockstep import assert_same_cycle
from .test_preemptor_walk import Runner

FAIRSHARE = Profile.load("fairshare")
USERS = ("", "ann", "bob")


def reference_charge(ledger: UsageLedger, holdings: Iterable[Holding], now: float
                     ) -> UsageLedger:
    """The ledger's charge as it was before the kept rates: a `Used` per running task."""
    def charges() -> Iterator[tuple[UsageKey, Used]]:
        for h in holdings:
            if h.started is None:
                continue
            seconds = now - (h.started if ledger.at is None else max(h.started, ledger.at))
            if seconds > 0 and not h.resources.is_zero():
                yield UsageKey(h.vc, h.user), Used.of(h.resources, seconds)
    return ledger.charge(charges(), now)


def same_ledger(got: UsageLedger, want: UsageLedger, step: int) -> None:
    assert got.at == want.at, f"charge {step}"
    # Bit for bit, in order: the usage plugin sums entries in this order.
    assert [(k, v.gpu.hex(), v.cpu.hex(), v.memory.hex()) for k, v in got.entries.items()] \
        == [(k, v.gpu.hex(), v.cpu.hex(), v.memory.hex()) for k, v in want.entries.items()], \
        f"charge {step}"


SHAPES = (Resources.of(cpu=1_000, memory=1_024, gpu=1), Resources.of(cpu=3_500, gpu=2),
          Resources.of(cpu=250, memory=300), Resources(), Resources.of(memory=7, gpu=1))
"""Task shapes: GPU ones, CPU only, nothing at all (charged nothing), odd fractions."""


@st.composite
def running_worlds(draw: st.DrawFn) -> Snapshot:
    """Jobs of one or two groups, of several users and virtual clusters, whose
    tasks run since spread times (some bound, not started yet), and some waiting."""
    count = draw(st.integers(1, 10))
    nodes = tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=8))
                  for i in range(count))  # a node each: a job holds at most one's worth
    jobs: list[Job] = []
    for i in range(count):
        groups = tuple(TaskGroup(f"g{g}", draw(st.integers(1, 2)), draw(st.sampled_from(SHAPES)))
                       for g in range(draw(st.integers(1, 2))))
        job = Job(f"j{i}", groups, queue=draw(st.sampled_from(("a", "b"))),
                  user=draw(st.sampled_from(USERS)), scheduler_name=SchedulerName.SHOAL,
                  submitted=0.0)
        if draw(st.booleans()):
            node = nodes[i].name
            tasks = tuple(Task(job.name, g.name, k, TaskState.RUNNING, node, (),
                               draw(st.sampled_from((None, 0.0, 3.0, 90.0, 1000.0))))
                          for g in groups for k in range(g.replicas))
            job = replace(job, tasks=tasks)
        jobs.append(job)
    return Snapshot(nodes, tuple(jobs), (VirtualCluster("a"), VirtualCluster("b")),
                    now=0.0)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_kept_rates_charge_as_holdings(data: st.DataObject) -> None:
    model = SchedulerModel.from_snapshot(data.draw(running_worlds(), label="world"))
    model.now = data.draw(st.sampled_from([0.0, 5.0, 1000.0, 5000.0]), label="start")
    half_life = data.draw(st.sampled_from([60.0, 3600.0, 7 * 86400.0]), label="half-life")
    ledger = UsageLedger(half_life)
    rates = UsageRates()
    for step in range(data.draw(st.integers(2, 6), label="charges")):
        kept = ledger.charged_rates(rates.running(model.jobs.values()), model.now)
        want = reference_charge(ledger, model.holdings(), model.now)
        same_ledger(kept, want, step)
        assert ledger.charged(model.holdings(), model.now) == want  # the ledger's own path
        ledger = kept
        _change(data, model, step)
    event("charged something" if ledger.entries else "charged nothing")


def _change(data: st.DataObject, model: SchedulerModel, step: int) -> None:
    """Between charges: a job ends, loses a task, gets a new spec or user, a job arrives,
    or nothing; then the clock moves on (or stays)."""
    change = data.draw(st.sampled_from(["none", "finish", "evict", "respec", "user",
                                        "arrive"]), label="change")
    running = sorted(name for name, info in model.jobs.items() if info.running)
    if change == "finish" and running:
        model.remove_job(data.draw(st.sampled_from(running), label="finished"))
    elif change == "evict" and running:
        name = data.draw(st.sampled_from(running), label="evicted")
        model.release_task(model.jobs[name].running[0].ref)
    elif change in ("respec", "user") and running:
        info = model.jobs[data.draw(st.sampled_from(running), label="changed")]
        if change == "respec":  # the simulator records what a job attained so
            info.job = replace(info.job, attained_gpu_seconds=float(step + 1))
        else:
            info.job = replace(info.job, user=data.draw(st.sampled_from(USERS), label="to"))
    elif change == "arrive":
        model.add_job(Job(f"late{step}", (TaskGroup("w", 1, Resources.of(gpu=1)),),
                          scheduler_name=SchedulerName.SHOAL, submitted=model.now))
    model.now += data.draw(st.sampled_from([0.0, 1.0, 60.0, 3600.0]), label="elapsed")


# ---- kept listings ----------------------------------------------------------------------

GPU = Resources.of(cpu=1_000, memory=1_024, gpu=1)


@contextmanager
def listing_afresh() -> Iterator[None]:
    with patch.object(ProportionalReclamation, "keeps_listings", False):
        yield


@contextmanager
def counting_listings(made: list[int], asked: list[int]) -> Iterator[None]:
    """Count the listings made and the preemptors answered: fewer listings than answers
    where kept ones answer."""
    listing, candidates = ProportionalReclamation._list, ProportionalReclamation.candidates

    def counted(self: ProportionalReclamation, *args: Any) -> Any:
        made.append(1)
        return listing(self, *args)

    def answered(self: ProportionalReclamation, *args: Any) -> Any:
        asked.append(1)
        return candidates(self, *args)

    with patch.object(ProportionalReclamation, "_list", counted), \
            patch.object(ProportionalReclamation, "candidates", answered):
        yield


@st.composite
def crowded(draw: st.DrawFn) -> Snapshot:
    """Nodes filled by jobs of some virtual clusters (started at spread times), with
    waiting jobs of alike shapes in the others: preemptors below their deserved share
    whose terms repeat."""
    queues = ("a", "b", "c")
    nodes = tuple(Node(f"n{i}", GPU.scale(4)) for i in range(draw(st.integers(1, 3))))
    jobs: list[Job] = []
    for node in nodes:
        used = 0
        while used < 4 and draw(st.integers(0, 4)) > 0:
            size = min(draw(st.sampled_from((1, 2))), 4 - used)
            name = f"r{len(jobs)}"
            job = Job(name, (TaskGroup("w", 1, GPU.scale(size)),),
                      queue=draw(st.sampled_from(queues[:2])),
                      scheduler_name=SchedulerName.SHOAL, submitted=0.0,
                      priority_class=draw(st.sampled_from((None, "low"))))
            started = draw(st.sampled_from((0.0, 500.0, 900.0)))
            jobs.append(replace(job, tasks=(Task(name, "w", 0, TaskState.RUNNING, node.name,
                                                 tuple(range(used, used + size)), started),)))
            used += size
    for i in range(draw(st.integers(1, 6))):
        jobs.append(Job(f"w{i}", (TaskGroup("w", draw(st.integers(1, 2)),
                                            GPU.scale(draw(st.sampled_from((1, 2))))),),
                        queue=draw(st.sampled_from(queues)),
                        scheduler_name=SchedulerName.SHOAL, submitted=1.0 + i))
    return Snapshot(nodes, tuple(jobs), tuple(VirtualCluster(q) for q in queues),
                    (PriorityClass("low", 10),), now=1_000.0)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_kept_listings_decide_as_fresh_listings(data: st.DataObject) -> None:
    snapshot = data.draw(crowded(), label="world")
    kept = Runner(SchedulerModel.from_snapshot(snapshot), FAIRSHARE, True, None)
    fresh = Runner(SchedulerModel.from_snapshot(snapshot), FAIRSHARE, True, None)
    made: list[int] = []
    asked: list[int] = []
    for step in range(data.draw(st.integers(2, 5), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        with counting_listings(made, asked):
            got = kept.cycle(close)
        with listing_afresh():
            want = fresh.cycle(close)
        assert_same_cycle(got, want, close, step)
        change = data.draw(st.sampled_from(("arrive", "finish", "tick")), label="change")
        running = sorted(n for n, j in kept.model.jobs.items() if j.running)
        for each in (kept.model, fresh.model):
            if change == "arrive":
                each.add_job(Job(f"s{step}", (TaskGroup("w", 2, GPU),),
                                 queue="c" if step % 2 else "a",
                                 scheduler_name=SchedulerName.SHOAL, submitted=10.0 + step))
            elif change == "finish" and running:
                each.remove_job(running[step % len(running)])
            each.now += 60.0
    event("kept listings answered" if len(asked) > len(made) else "none answered")
