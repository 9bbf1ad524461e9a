"""An evicting search judged as a whole only once its first unit alone is not worth a
placement (`VictimTrials.judges_late`), and a dropped job's units looked for by their
start in their shape's entries (`ByStart.without` given the units).

1. Runs decide the same when every judgeable search is judged before any trial eviction
   (`judges_late` False, a test knob: the code before): every cycle's binds, evictions,
   resizes and reasons in random worlds under the profiles that preempt, and every job's
   life in random `las` traces. A small trace meets every side: searches that fit on
   their first unit (never judged) and searches judged after it (turned down or not).
2. Every drop of a job from a rank's kept shapes, given its units, leaves what the scan
   over every entry leaves (the same shapes in the same order, the same entries), in the
   same worlds and traces; a unit whose job's spec moved after it was filed is still
   dropped (the scan).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.scheduler.actions.victim_listing import VictimListing
from shoal.scheduler.actions.victim_trials import VictimTrials
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.victims import ByStart, VictimUnit
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import World, worlds
from .test_kept_indexes import LAS, PER_GPU, TraceCluster, traces

RULES = settings(max_examples=20, deadline=None)
PREEMPTING = ("lend-reclaim", "evict-first", "las", "las-elastic", "elastic")


@contextmanager
def judged_first() -> Iterator[None]:
    with patch.object(VictimTrials, "judges_late", False):
        yield


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_cycles_decide_as_judged_before_trials(world: World, count: int) -> None:
    world.assert_cycles_alike(count, judged_first)


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_las_runs_decide_as_judged_before_trials(trace: Trace, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    late = simulate(trace, TraceCluster(nodes), LAS, config)
    with judged_first():
        early = simulate(trace, TraceCluster(nodes), LAS, config)
    assert late.jobs == early.jobs


def backlog() -> Trace:
    jobs = [TraceJob(f"j{n}", 10.0 * (n // 3), 5_000.0 + 300.0 * (n % 7), 1 + n % 3,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    return Trace.of(jobs, "backlog")


def held_apart() -> Trace:
    """Eight one-GPU jobs fill two nodes of four; two one-GPU jobs, one per node, then a
    four-GPU and a two-GPU job take from them: the one-GPU jobs fit on their first unit;
    the four-GPU one is judged after it and turned down on room (the newcomers hold a GPU
    of each node); the two-GPU one is judged after it and evicts two."""
    jobs = [TraceJob(f"v{n}", 0.0, 20_000.0, 1, PER_GPU.scale(1), queue="a", gang=True)
            for n in range(8)]
    jobs += [TraceJob(f"p{kind}", 1000.0, 20_000.0, 1, PER_GPU.scale(1), queue="a",
                      node_selector={"gpu-type": kind}) for kind in "AB"]
    jobs += [TraceJob("four", 1010.0, 3_000.0, 1, PER_GPU.scale(4), queue="a", gang=True),
             TraceJob("two", 1020.0, 3_000.0, 1, PER_GPU.scale(2), queue="a", gang=True)]
    return Trace.of(jobs, "held apart")


def test_searches_are_judged_only_once_their_first_unit_does_not_place() -> None:
    verdicts: list[bool | None] = []
    judging = VictimListing._judged_early

    def counted(self: VictimListing, *args: object) -> bool | None:
        found = judging(self, *args)  # type: ignore[arg-type]
        verdicts.append(found)
        return found

    config = SimConfig(cycle_on_events=True, check_invariants=True)
    with patch.object(VictimListing, "_judged_early", counted):
        late = simulate(held_apart(), TraceCluster(2), LAS, config)
        late_verdicts = list(verdicts)
        verdicts.clear()
        with judged_first():
            early = simulate(held_apart(), TraceCluster(2), LAS, config)
    assert late.jobs == early.jobs
    assert True in late_verdicts and False in late_verdicts and None not in late_verdicts
    # Judged before the trials, the searches that fit on their first unit were judged too.
    assert verdicts.count(True) > late_verdicts.count(True)
    assert verdicts.count(False) == late_verdicts.count(False)


@contextmanager
def drops_checked(dropped: list[int]) -> Iterator[None]:
    """Every drop given the units checked against the scan over every entry."""
    without = ByStart.without

    def checked(self: ByStart, job: JobInfo,
                units: Sequence[VictimUnit] | None = None) -> ByStart:
        scanned = without(self, job)
        if units is None:
            return scanned
        found = without(self, job, units)
        assert list(found.shapes) == list(scanned.shapes)
        for shape, entries in found.shapes.items():
            assert [(s, id(u)) for s, u in entries] == \
                [(s, id(u)) for s, u in scanned.shapes[shape]]
        assert [id(u) for u in found.misc] == [id(u) for u in scanned.misc]
        dropped.append(len(units))
        return found

    with patch.object(ByStart, "without", checked):
        yield


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_drops_from_kept_shapes_leave_what_a_scan_leaves(world: World, count: int) -> None:
    with drops_checked([]):
        for _ in range(count):
            world = world.step()[2]


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_drops_under_las_leave_what_a_scan_leaves(trace: Trace, nodes: int) -> None:
    with drops_checked([]):
        simulate(trace, TraceCluster(nodes), LAS, SimConfig(cycle_on_events=True))


def test_a_las_backlog_drops_from_kept_shapes() -> None:
    jobs = [TraceJob(f"j{n}", 10.0 * (n // 3), 5_000.0 + 300.0 * (n % 7), 1 + n % 3,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    dropped: list[int] = []
    with drops_checked(dropped):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), LAS,
                 SimConfig(cycle_on_events=True))
    assert dropped


def test_a_unit_whose_spec_moved_since_it_was_filed_is_still_dropped() -> None:
    """Its shape read now is not the one it was filed under (a checkpoint interval came):
    found in neither place, the drop scans every entry."""
    request = PER_GPU.scale(2)
    spec = SimpleNamespace(checkpoint_interval=None,
                           group=lambda name: SimpleNamespace(resources=request))
    task = SimpleNamespace(started=5.0, ref=SimpleNamespace(group="g"))
    job = SimpleNamespace(job=spec, running=[task])
    other = SimpleNamespace(job=spec, running=[task])
    unit = VictimUnit(job, (task,), None, 0)  # type: ignore[arg-type]
    kept = VictimUnit(other, (task,), None, 0)  # type: ignore[arg-type]
    shapes = ByStart.of([unit, kept])
    assert [len(entries) for entries in shapes.shapes.values()] == [2]
    job.job = SimpleNamespace(checkpoint_interval=60.0, group=spec.group)
    left = shapes.without(job, [unit])  # type: ignore[arg-type]
    assert [[u for _, u in entries] for entries in left.shapes.values()] == [[kept]]
    assert left.misc == []
    # As filed, it is found by its start without a scan.
    job.job = spec
    assert [[u for _, u in e] for e in shapes._without_units(job, [unit]).shapes.values()] \
        == [[kept]]  # type: ignore[union-attr, arg-type]
