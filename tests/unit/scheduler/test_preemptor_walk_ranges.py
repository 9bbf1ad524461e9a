"""The ranges a walk by preemptor class answers without visiting
(`shoal.scheduler.actions.preemptor_walk`): which jobs settle the lending, last first, and
how many answers a commit counts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sortedcontainers import SortedList

from shoal.scheduler.actions.preemptor_walk import PreemptorWalk, _Source
from shoal.scheduler.preemptor_class import Verdict

LENT, WITHHELD = Verdict((), True), Verdict((), False)


def walk_over(lines: list[list[int]], skip: set[str]) -> PreemptorWalk:
    """A walk over parkable sources whose jobs are named after their order keys."""
    walk = PreemptorWalk.__new__(PreemptorWalk)
    walk.sources = []
    for keys in lines:
        source = _Source(SortedList(((k,), f"j{k}") for k in keys), True)
        marked = sorted((k,) for k in keys if f"j{k}" in skip)
        source.skipped = marked or None
        walk.sources.append(source)
    walk.skip = frozenset(skip)  # type: ignore[arg-type]
    walk.heap, walk.parked, walk.answered = [], [], []
    walk.floor = walk.current = None
    walk.unwritten = {}  # no reasons left unwritten
    walk.cycle = SimpleNamespace(classes=SimpleNamespace(skipped=0))  # type: ignore[assignment]
    return walk


def names(found: list[tuple[Any, Verdict]]) -> list[tuple[str, bool]]:
    return [(job, verdict.lending) for job, verdict in found]


def test_the_jobs_answered_since_the_last_search_come_last_first() -> None:
    walk = walk_over([[1, 3, 5, 7, 9], [2, 4, 6, 8]], skip={"j5"})
    walk.parked = [(0, 1, WITHHELD), (1, 1, LENT)]  # parked at j3 and at j4
    walk.answered = [((2,), "loose2", LENT), ((6.5,), "loose6", WITHHELD)]
    walk.floor, walk.current = (3.5,), (8,)
    assert names(walk.unsettled()) == [
        ("j7", False), ("loose6", False), ("j6", True), ("j4", True)]
    # Settled: from here on only what is answered after the job being visited counts.
    assert walk.floor == (8,) and walk.answered == []
    walk.current = (10,)
    assert names(walk.unsettled()) == [("j9", False)]


def test_a_commit_counts_the_answers_and_takes_parked_classes_up_after_it() -> None:
    walk = walk_over([[1, 3, 5, 7, 9], [2, 4, 6, 8]], skip={"j5"})
    walk.parked = [(0, 1, WITHHELD), (1, 1, LENT)]  # parked at j3 and at j4
    walk._resume((6,))
    # Answered before the commit: j3 and j4, counted as they were parked, then j6 (j5 is
    # skipped: no candidate); each class takes up again at its first job after j6.
    assert [s.at for s in walk.sources] == [3, 3]
    assert walk.cycle.classes.skipped == 1
    assert sorted(walk.heap) == [((7,), 0), ((8,), 1)]
    assert walk.parked == []
