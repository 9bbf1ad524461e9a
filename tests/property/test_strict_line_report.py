"""Strict FIFO's line, reported as what moved, adds up to every reason (issue 18).

Under `fifo` every job behind the blocked head waits `Blocked` behind it, unless the
enqueue action turns it away. `Session.report` reads that line as one span and, while the
head, its place and the verdicts stand, visits only the jobs that moved
(`shoal.scheduler.strict_line`); the ledger, with each report applied, must still hold
exactly `close`'s reasons from a model that judges every job afresh.

Many jobs of few shapes on a small cluster make long lines. Between cycles running jobs end
(the head may then bind, and the next job heads the line), tasks are evicted back into the
line, waiting jobs leave it (cancelled), and jobs arrive at its end or in its middle
(submitted earlier), some too big for any node (turned away by the enqueue action).
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.scheduler.reason_report import ReasonLedger

from .lockstep import end_bound, evict_latest, moves, twins_on_small_nodes
from .test_class_walk import QUEUES, SHAPES, make_job
from .test_reason_report import closed, reported

LINE_SHAPES = st.one_of(
    st.sampled_from([(2, 1, True, False), (3, 2, True, False), (9, 1, True, False)]),
    SHAPES)
"""Mostly two shapes that fit an idle node, and one that fits none (9 CPUs of 8)."""

Arrivals = list[tuple[str, tuple[int, int, bool, int]]]


@settings(max_examples=150, deadline=None)
@given(nodes=st.integers(1, 3),
       jobs=st.lists(st.tuples(st.sampled_from(QUEUES), LINE_SHAPES), min_size=20,
                     max_size=80),
       steps=st.lists(st.one_of(
           st.just((0, 0, [], False, False)),  # quiet: the next report visits next to none
           st.just((0, 0, [], False, False)),
           st.tuples(st.integers(0, 2), st.integers(0, 3),
                     st.lists(st.tuples(st.sampled_from(QUEUES), LINE_SHAPES), max_size=5),
                     st.booleans(), st.booleans())),
           min_size=3, max_size=9),
       profile=st.sampled_from(["fifo", "fifo", "fifo-backfill"]))
def test_long_strict_lines_are_reported_by_what_moved(
        nodes: int, jobs: Arrivals, steps: list[tuple[int, int, Arrivals, bool, bool]],
        profile: str) -> None:
    made = [make_job(f"j{i:03d}", q, s, float(i)) for i, (q, s) in enumerate(jobs)]
    twins = twins_on_small_nodes(profile, nodes, QUEUES, made)
    chosen, hooks, live, fresh = twins.profile, twins.hooks, twins.live, twins.fresh
    ledger = ReasonLedger()
    bound: dict[str, None] = {}
    count = len(made)
    for step, (ends, leave, arrivals, early, evict) in enumerate(steps):
        line = ledger.line.reason if ledger.line is not None else None
        got, visited = reported(live, hooks, chosen, ledger)
        if line is not None and ledger.line is not None and ledger.line.reason != line \
                and visited < len(ledger):
            event("a new head reported as one reason")
        want = closed(fresh, hooks, chosen)
        assert moves(got) == moves(want), f"cycle {step}"
        assert ledger.reasons() == want.pending_by_job(), f"cycle {step}"
        if step:
            event("visited fewer than wait" if visited < len(want.pending)
                  else "visited all that wait")
        bound.update(dict.fromkeys(b.task.job for b in got.binds))
        end_bound(live, fresh, bound, ends)  # frees room: the head may bind
        waiting = [n for n in live.waiting.in_order() if not n.holding]
        for info in waiting[len(waiting) // 2:][:leave]:  # cancelled, from the line's middle
            live.remove_job(info.name)
            fresh.remove_job(info.name)
            bound.pop(info.name, None)
        if evict:
            evict_latest(live, fresh, bound)
        # Early arrivals sort into the middle of the line, not after every job there.
        new = [make_job(f"j{count + i:03d}", q, s, i + 0.5 if early else float(count + i))
               for i, (q, s) in enumerate(arrivals)]
        count += len(new)
        live.add_jobs(new)
        fresh.add_jobs(new)
