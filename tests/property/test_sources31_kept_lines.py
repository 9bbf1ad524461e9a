"""Each class line's walk source, and the set of line keys, kept from one cycle to the next.

The allocate action's class walk reads every line every cycle. Each line's source
(`class_lines.LineSource`: the line, its class, its first job and the order keys of its
first and last jobs, its size) is now kept with the line, updated by `ClassLines.sync` for
the lines it changed, and reset by each walk; the set of line keys is one frozen set kept
while no line comes or goes (`ClassLines.keys`), and the preempt action's walk keeps the
classes of the lines it read for the next walk of the same lines
(`PreemptorLines.walking`). Two models are driven in lockstep — one that keeps all that,
one that makes it afresh every cycle (`ClassLines.keeps_sources`,
`PreemptorLines.keeps_walking` off) — through arrivals, ends and stops; their decisions
must match in every cycle, and so must the unworded reasons read back. After every cycle
each kept source is checked against its line.
"""

from __future__ import annotations

from unittest import mock

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api.decisions import Decisions, PendingReason
from shoal.scheduler.actions.preemptor_walk import PreemptorLines
from shoal.scheduler.class_lines import ClassLines
from shoal.scheduler.framework import Action
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks

from .lockstep import assert_same_cycle, one_cycle
from .test_parked_classes import QUEUES, TYPES
from .test_room_refusals import Shape, load, step_world, twin_models

ATTAINED = st.sampled_from([0.0, 5_000.0, 50_000.0])
SHAPES = st.tuples(st.sampled_from(QUEUES), st.sampled_from([1_000, 1_000, 7_000]),
                   st.integers(1, 2), st.integers(1, 2),
                   st.sampled_from([True, True, True, False]), st.sampled_from([None, *TYPES]),
                   ATTAINED)
"""`test_room_refusals`' shapes, small enough that every class may start on the idle
cluster: every line is admitted, so the walks read the lines' kept set of keys."""

Reasons = dict[str, PendingReason | None]
WALKING = PreemptorLines.walking
REUSED: list[int] = [0]
"""How many preempt walks read the classes kept by the one before (`PreemptorLines.walking`)."""


def counted_walking(self: PreemptorLines, keys: frozenset[tuple[str, int]]) -> list[object]:
    """`PreemptorLines.walking`, counted, and checked against the classes listed afresh."""
    before = self._walking
    found = WALKING(self, keys)
    fresh = [c for where in keys for c in self.by_line.get(where, {}).values()]
    assert [id(c) for c in found] == [id(c) for c in fresh]
    REUSED[0] += before is not None and found is before[2]
    return found  # type: ignore[return-value]


def run(model: SchedulerModel, hooks: Hooks, actions: list[Action], worded: bool, read: bool,
        keeps: bool) -> tuple[Decisions, Reasons]:
    """One cycle, the profile's actions kept from cycle to cycle (as a driver keeps them);
    `keeps`: the walk sources kept across cycles."""
    with mock.patch.object(ClassLines, "keeps_sources", keeps), \
            mock.patch.object(PreemptorLines, "keeps_walking", keeps), \
            mock.patch.object(PreemptorLines, "walking", counted_walking):
        return one_cycle(model, hooks, actions, worded, read)


def assert_sources(model: SchedulerModel) -> bool:
    """Every kept source stands for its line as it is now; True if the keys are kept."""
    lines = model.class_lines
    assert list(lines.sources) == list(lines.lines)  # the same lines, in the same order
    for where, source in lines.sources.items():
        line = lines.lines[where]
        assert source.entries is line and source.where == where and source.klass == where[1]
        assert line, where  # a line is dropped as its last job leaves
        assert (source.head, source.first, source.last, source.size) == \
            (line[0][1], line[0][0], line[-1][0], len(line)), where
    kept = lines._keys
    assert kept is None or kept == set(lines.lines)
    return kept is not None


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 2),
       limits=st.lists(st.sampled_from([None, None, 8]), min_size=3, max_size=3),
       jobs=st.lists(SHAPES, min_size=4, max_size=20),
       steps=st.lists(st.tuples(st.sampled_from(["unworded", "unworded", "read", "worded"]),
                                st.sampled_from(["arrive", "arrive", "end", "end", "stop"]),
                                st.integers(1, 3),
                                st.lists(st.tuples(st.integers(0, 19), ATTAINED), max_size=2)),
                      min_size=3, max_size=10),
       profile=st.sampled_from(["las", "las", "sjf", "las-per-queue"]))
def test_kept_walk_sources_decide_as_sources_made_afresh(
        nodes: int, limits: list[int | None], jobs: list[Shape],
        steps: list[tuple[str, str, int, list[tuple[int, float]]]], profile: str) -> None:
    made, models = twin_models(nodes, limits, jobs)
    live, plain = models
    chosen = load(profile)
    hooks = Hooks(chosen.plugins())
    live_actions, plain_actions = chosen.actions(), chosen.actions()
    count = len(made)
    kept_keys = evictions = 0
    REUSED[0] = 0
    for step, (mode, change, ends, arrivals) in enumerate(steps):
        worded, read = mode == "worded", mode == "read"
        got, reasons = run(live, hooks, live_actions, worded, read, True)
        want, plain_reasons = run(plain, hooks, plain_actions, worded, read, False)
        assert_same_cycle(got, want, worded, step)
        evictions += len(got.evictions)
        assert reasons == plain_reasons, f"cycle {step}"
        kept_keys += assert_sources(live)
        assert_sources(plain)
        # Each arrival is like a job of the start (most often, of a line that waits) but
        # for its earlier service: a new preemptor class in a line kept as it was.
        shapes = [(*jobs[i % len(jobs)][:-1], attained) for i, attained in arrivals]
        count = step_world(models, live, change, ends, shapes, count)
    event(f"cycles with the line keys kept: {'some' if kept_keys else 'none'}")
    event(f"preempt walks that read the kept classes: {'some' if REUSED[0] else 'none'}")
    event(f"evictions: {'some' if evictions else 'none'}")
