"""A rank's victims taken unit by unit from their kept shapes (`victims.ByStart`) come in
the order of the score sorted whole.

1. Every time a search takes a virtual cluster's victims in the score's order a rank at a
   time (`QueueVictims.in_order`), what it is given — as far as it takes them, and all of
   them — is each rank sorted whole by the score at that instant, as the action sorts
   it (`victims.ordered`, each victim's rank asked), in random
   worlds under the profiles that preempt and in random traces replayed under `las`
   (gangs of several tasks, jobs placed task by task, several jobs started at one instant
   with one shape: ties the job order tells apart), while the shapes are kept across
   cycles and brought up to date as jobs are filed and dropped.
2. Runs decide the same with the kept shapes and without them (`by_start`, a test knob).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.scheduler.actions.victim_listing import VictimListing
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import VictimUnit
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import World, worlds
from .test_kept_indexes import LAS, PER_GPU, TraceCluster, traces

RULES = settings(max_examples=20, deadline=None)
PREEMPTING = ("lend-reclaim", "evict-first", "las", "las-elastic", "elastic")


@contextmanager
def compared(asked: list[int]) -> Iterator[None]:
    """Every ordered take checked against each rank sorted whole; `asked` collects how
    many units each take was checked over."""
    taking = QueueVictims.in_order

    def checked(self: QueueVictims, count: int) -> Iterator[VictimUnit]:
        score = self._score
        if score is None:
            yield from taking(self, count)
            return
        plain: list[VictimUnit] = []
        seen = 0
        for at in self._ranks:
            if seen >= count:
                break
            seen += self._sizes[at]
            # The score as the action sorts a rank whole (`ordered`, ranks asked).
            plain.extend(self._order([u for listed in self._by_rank[at].values()
                                      for u in listed]))
        # Part of it first (as a search that fits early), then all of it, then again.
        assert list(islice(taking(self, count), 2)) == plain[:2]
        assert list(taking(self, count)) == plain
        asked.append(len(plain))
        yield from taking(self, count)

    with patch.object(QueueVictims, "in_order", checked):
        yield


@contextmanager
def sorted_whole() -> Iterator[None]:
    with patch.object(VictimListing, "by_start", False):
        yield


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_kept_shapes_give_the_scores_order(world: World, count: int) -> None:
    with compared([]):
        for _ in range(count):
            world = world.step()[2]


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_kept_shapes_give_the_scores_order_under_las(trace: Trace, nodes: int) -> None:
    with compared([]):
        simulate(trace, TraceCluster(nodes), LAS, SimConfig(cycle_on_events=True))


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_cycles_decide_as_with_ranks_sorted_whole(world: World, count: int) -> None:
    world.assert_cycles_alike(count, sorted_whole)


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_las_runs_decide_as_with_ranks_sorted_whole(trace: Trace, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), LAS, config)
    with sorted_whole():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs


def test_a_las_backlog_takes_victims_from_kept_shapes() -> None:
    """Under a las backlog, evicting searches take their victims from kept shapes, ranks
    of several units among them, jobs started together tying on every key but the job
    order."""
    jobs = [TraceJob(f"j{n}", 10.0 * (n // 3), 5_000.0 + 300.0 * (n % 7), 1 + n % 2,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    asked: list[int] = []
    with compared(asked):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), LAS,
                 SimConfig(cycle_on_events=True))
    assert asked and max(asked) > 1
