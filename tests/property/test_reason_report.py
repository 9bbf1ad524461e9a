"""Reasons reported as changes add up to the reasons a full walk gives (issue 18).

`Session.report` tells a kept ledger only which jobs' reasons changed since its last report
(`shoal.scheduler.reason_report`); the ledger, with each report applied, must hold exactly
`close`'s pending reasons — every waiting job's, and no other — cycle after cycle.

Two models of one world are driven in lockstep, as in `test_incremental.py`: one kept and
incremental, which reports to a ledger, and one that judges every waiting job afresh and
closes each cycle. Between cycles jobs arrive, end and are evicted. The first test draws
worlds of every kind under many profiles; the second many jobs of few shapes on a small
cluster (as `test_class_walk.py`), where class lines are long, left unwritten as ranges and
skipped by the report when nothing in them moved — and where jobs join them in the middle
(submitted early, or evicted), among jobs the last report skipped.
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.reason_report import ReasonLedger
from shoal.scheduler.session import Hooks, Session

from .lockstep import change_both, end_bound, evict_latest, moves, twins_on_small_nodes
from .strategies import PROFILE_NAMES, World, worlds
from .test_class_walk import QUEUES, SHAPES, make_job

PROFILES = sorted({*PROFILE_NAMES, "fifo", "fifo-backfill", "strict-fifo", "las", "sjf",
                   "evict-first", "lend-reclaim", "elastic", "fairshare", "spread"})


def reported(model: SchedulerModel, hooks: Hooks, profile: Profile, ledger: ReasonLedger
             ) -> tuple[Decisions, int]:
    """One cycle that reports to the ledger: its decisions, and how many jobs it visited."""
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    changes = session.report(ledger)
    ledger.apply(changes)
    assert not set(changes.waits) & set(changes.gone)
    return session.decide(), changes.visited


def closed(model: SchedulerModel, hooks: Hooks, profile: Profile) -> Decisions:
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    return session.close()


@settings(max_examples=150, deadline=None)
@given(world=worlds(profiles=PROFILES), data=st.data())
def test_reported_changes_add_up_to_every_reason(world: World, data: st.DataObject) -> None:
    snapshot = world.snapshot()
    live = SchedulerModel.from_snapshot(snapshot)
    fresh = SchedulerModel.from_snapshot(snapshot)
    fresh.incremental = False
    hooks = Hooks(world.profile.plugins())
    ledger = ReasonLedger()
    later = [j for j in world.jobs if not j.tasks]
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        got, _ = reported(live, hooks, world.profile, ledger)
        want = closed(fresh, hooks, world.profile)
        assert moves(got) == moves(want), f"cycle {step}"
        assert ledger.reasons() == want.pending_by_job(), f"cycle {step}"
        change_both(data, live, fresh, later, step)


FEW_SHAPES = st.one_of(st.sampled_from([(2, 1, True, False), (3, 2, True, False)]), SHAPES)
"""Mostly two shapes, so that class lines are long."""


@settings(max_examples=120, deadline=None)
@given(nodes=st.integers(1, 4),
       jobs=st.lists(st.tuples(st.sampled_from(QUEUES), FEW_SHAPES), min_size=1,
                     max_size=80),
       steps=st.lists(st.one_of(
           st.just((0, [], False, False)),  # quiet: the next report visits next to nothing
           st.tuples(st.integers(0, 3),
                     st.lists(st.tuples(st.sampled_from(QUEUES), FEW_SHAPES), max_size=6),
                     st.booleans(), st.booleans())),
           min_size=3, max_size=8),
       profile=st.sampled_from(["default", "spread"]))
def test_long_class_lines_are_reported_by_what_moved(
        nodes: int, jobs: list[tuple[str, tuple[int, int, bool, int]]],
        steps: list[tuple[int, list[tuple[str, tuple[int, int, bool, int]]], bool, bool]],
        profile: str) -> None:
    made = [make_job(f"j{i:03d}", q, s, float(i)) for i, (q, s) in enumerate(jobs)]
    twins = twins_on_small_nodes(profile, nodes, QUEUES, made)
    chosen, hooks, live, fresh = twins.profile, twins.hooks, twins.live, twins.fresh
    ledger = ReasonLedger()
    bound: dict[str, None] = {}
    count = len(made)
    for step, (ends, arrivals, early, evict) in enumerate(steps):
        got, visited = reported(live, hooks, chosen, ledger)
        want = closed(fresh, hooks, chosen)
        assert moves(got) == moves(want), f"cycle {step}"
        assert ledger.reasons() == want.pending_by_job(), f"cycle {step}"
        if step:
            event("visited fewer than wait" if visited < len(want.pending)
                  else "visited all that wait")
        bound.update(dict.fromkeys(b.task.job for b in got.binds))
        end_bound(live, fresh, bound, ends)
        if evict:
            evict_latest(live, fresh, bound)
        # Early arrivals sort into the middle of their lines, not after every job there.
        new = [make_job(f"j{count + i:03d}", q, s, i + 0.5 if early else float(count + i))
               for i, (q, s) in enumerate(arrivals)]
        count += len(new)
        live.add_jobs(new)
        fresh.add_jobs(new)
