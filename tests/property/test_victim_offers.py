"""What a full preemption search reads more cheaply (issue 18, eighth round) is what the plain
definitions give.

Random traces are replayed by the simulator under `las` with low thresholds (jobs start,
stop, are evicted and change class between cycles; the actions are kept across cycles):

1. A search is offered its units in rank order (`VictimListing.offer`): the same units as
   `candidates`, which are those units in the victims' order.
2. A running job's rank, read from the kept table when first asked, is the one the
   action gave before: the rank it had when first asked, or else the one it was filed at
   when the table was first brought up to now after it was filed.
3. The room counts of a search read from the pools' censuses (`victim_trials._fitting`,
   `_room_after`) are the node-by-node counts, as far as a count is read.
4. Victim indexes kept across a commit in other virtual clusters, lazily sorted offers and
   census counts decide as the plain paths do: every job's life is the same, in random
   `las` traces and in random worlds under the profiles that preempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.resources import Resources
from shoal.core.nodes import NodePool
from shoal.scheduler.actions import victim_trials
from shoal.scheduler.actions.victim_listing import VictimListing
from shoal.scheduler.actions.victim_trials import VictimTrials
from shoal.scheduler.gang_choice import GangNeed, pending_groups, replicas_fitting
from shoal.scheduler.held_back import unit_key
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.running_table import RunningTable
from shoal.scheduler.victims import VictimUnit, ordered
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import World, worlds
from .test_kept_indexes import LAS, PER_GPU, TraceCluster, traces

RULES = settings(max_examples=25, deadline=None)
PREEMPTING = ("lend-reclaim", "evict-first", "las", "las-elastic", "elastic")
CONFIG = SimConfig(cycle_on_events=True, check_invariants=True)


@contextmanager
def checked_offers(unsorted: list[int]) -> Iterator[None]:
    """Every offer checked against `candidates`; `unsorted` counts those in rank order."""
    offer = VictimListing.offer

    def checked(self: VictimListing, preemptor: JobInfo) -> tuple[list[VictimUnit], bool]:
        units, in_order = offer(self, preemptor)
        want = self.candidates(preemptor)
        if in_order:
            assert units == want
            return units, in_order
        unsorted[0] += 1
        ranks = [self.rank(u.job) for u in units]
        assert ranks == sorted(ranks, reverse=True)
        session = self.session
        assert [unit_key(u) for u in ordered(units, self.rank, session.job_order_key,
                                             session.now)] == [unit_key(u) for u in want]
        return units, in_order

    with patch.object(VictimListing, "offer", checked):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_an_offer_is_the_candidates_in_rank_order(trace: Trace, nodes: int) -> None:
    with checked_offers([0]):
        simulate(trace, TraceCluster(nodes), LAS, CONFIG)


def backlog() -> Trace:
    jobs = [TraceJob(f"j{n}", 10.0 * n, 5_000.0 + 300.0 * (n % 7), 1 + n % 2,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    return Trace.of(jobs, "backlog")


@contextmanager
def checked_ranks(read: list[int]) -> Iterator[None]:
    """Every rank the action gives compared with the rank the eager copy gave: the first
    given, or else the table's at the end of the first refresh that filed the job."""
    rank, refresh = VictimListing.rank, VictimListing._refresh

    def given(listing: VictimListing) -> dict[JobInfo, tuple[Any, ...]]:
        known: dict[JobInfo, tuple[Any, ...]] = vars(listing).setdefault("given_ranks", {})
        return known

    def ranked(self: VictimListing, job: JobInfo) -> tuple[Any, ...]:
        known = given(self)
        if job not in self._ranks and self._read_table is not None \
                and self._read_table.rank_of(job) is not None:
            read[0] += 1
        key = rank(self, job)
        assert known.setdefault(job, key) == key
        return key

    def refreshed(self: VictimListing, table: RunningTable) -> None:
        refresh(self, table)
        known = given(self)
        for job, key in table.ranks():
            known.setdefault(job, key)

    with patch.object(VictimListing, "rank", ranked), \
            patch.object(VictimListing, "_refresh", refreshed):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_a_rank_read_from_the_table_is_the_one_copied_before(trace: Trace, nodes: int
                                                             ) -> None:
    with checked_ranks([0]):
        simulate(trace, TraceCluster(nodes), LAS, CONFIG)


@pytest.mark.parametrize("checked", [checked_offers, checked_ranks],
                         ids=["offered unsorted", "ranks read from the table"])
def test_a_las_backlog_takes_the_shortcut(checked: Callable[[list[int]], Any]) -> None:
    taken = [0]
    # Ranks sorted whole ask every victim's rank; taken from kept shapes they ask none.
    with checked(taken), patch.object(VictimListing, "by_start", False):
        simulate(backlog(), TraceCluster(2), LAS, CONFIG)
    assert taken[0] > 0


@contextmanager
def checked_counts(read: list[int]) -> Iterator[None]:
    """Every count read from a census compared with the node-by-node count."""
    fitting, room_after = victim_trials._fitting, VictimTrials._room_after

    def counted(pool: NodePool, request: Resources, enough: int, excluded: set[int]) -> int:
        fast = fitting(pool, request, enough, excluded)
        plain = replicas_fitting(pool.nodes, request, enough, excluded)
        assert fast == plain or min(fast, plain) >= enough
        read[0] += 1
        return fast

    def roomed(self: VictimTrials, preemptor: JobInfo, need: GangNeed,
               freed: dict[int, Any]) -> bool:
        answer = room_after(self, preemptor, need, freed)
        session = self.session
        excluded = session.excluded_nodes
        for group, _ in pending_groups(preemptor):
            if group.resources.is_zero():
                continue
            pool = session.pool_for(group)
            assert self._fitting[(pool.key, group.resources, None)] == sum(
                s.how_many(group.resources) for s in pool.nodes if s.ordinal not in excluded)
        return answer

    with patch.object(victim_trials, "_fitting", counted), \
            patch.object(VictimTrials, "_room_after", roomed):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_census_counts_are_the_node_by_node_counts(trace: Trace, nodes: int) -> None:
    with checked_counts([0]):
        simulate(trace, TraceCluster(nodes), LAS, CONFIG)


@contextmanager
def plain() -> Iterator[None]:
    """The plain paths: offers sorted, every index built again after a commit, counts
    node by node."""
    def sorted_offer(self: VictimListing, preemptor: JobInfo
                     ) -> tuple[list[VictimUnit], bool]:
        return self.candidates(preemptor), True

    def forget_all(self: VictimListing) -> None:
        self._indexes, self._indexed = {}, self._victims

    def node_by_node(pool: NodePool, request: Resources, enough: int,
                     excluded: set[int]) -> int:
        return replicas_fitting(pool.nodes, request, enough, excluded)

    with patch.object(VictimListing, "offer", sorted_offer), \
            patch.object(VictimListing, "_forget_indexes", forget_all), \
            patch.object(victim_trials, "_fitting", node_by_node):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_las_runs_decide_as_the_plain_paths(trace: Trace, nodes: int) -> None:
    fast = simulate(trace, TraceCluster(nodes), LAS, CONFIG)
    with plain():
        slow = simulate(trace, TraceCluster(nodes), LAS, CONFIG)
    assert fast.jobs == slow.jobs


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_cycles_decide_as_the_plain_paths(world: World, count: int) -> None:
    world.assert_cycles_alike(count, plain)
