"""A preemption's room read from the pools' censuses says what counting node by node says.

1. Every time the trial loop asks a census-read room (`victim_trials.CensusRoom`) whether
   the preemptor could fit, it answers as `gang_choice.Room` counted afresh on the nodes as
   they stand, tentative evictions included; and every early judgement's room
   (`VictimTrials._room_after`, read from the census's shares, nodes whose GPUs bound them
   skipped) is the one counted node by node — in random worlds under the profiles that
   preempt (task limits, virtual nodes, CPU reserves: there the census is not read) and
   in random traces replayed under `las`.
2. Runs decide the same with the census-read rooms and without them (`census_room`, a
   test knob): every cycle's binds, evictions, resizes and reasons, and every job's life
   in random `las` traces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.resources import Resources
from shoal.core.nodes import NodeState
from shoal.scheduler.actions.victim_trials import CensusRoom, Trial, VictimTrials
from shoal.scheduler.gang_choice import GangNeed, Room
from shoal.scheduler.jobs import JobInfo
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import World, worlds
from .test_kept_indexes import LAS, PER_GPU, TraceCluster, traces

RULES = settings(max_examples=20, deadline=None)
PREEMPTING = ("lend-reclaim", "evict-first", "las", "las-elastic", "elastic")


@contextmanager
def compared(asked: list[bool]) -> Iterator[None]:
    """Every census-read room and every early room checked against node-by-node counts;
    `asked` collects the census-read answers."""
    trying = VictimTrials._worth_trying
    after = VictimTrials._room_after

    def checked(self: VictimTrials, trial: Trial, gained: int, preemptor: JobInfo,
                need: GangNeed, quota_bound: bool,
                room: Room | CensusRoom | None = None) -> bool:
        if isinstance(room, CensusRoom):
            answer = room.suffices()
            assert answer == Room(self.session, preemptor, need).suffices()
            asked.append(answer)
        return trying(self, trial, gained, preemptor, need, quota_bound, room)

    def checked_after(self: VictimTrials, preemptor: JobInfo, need: GangNeed,
                      freed: dict[int, tuple[NodeState, Resources]]) -> bool:
        answer = after(self, preemptor, need, freed)
        with unread():
            assert answer == after(self, preemptor, need, freed)
        return answer

    with patch.object(VictimTrials, "_worth_trying", checked), \
            patch.object(VictimTrials, "_room_after", checked_after):
        yield


@contextmanager
def unread() -> Iterator[None]:
    with patch.object(VictimTrials, "census_room", False):
        yield


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_census_rooms_answer_as_counted_rooms(world: World, count: int) -> None:
    with compared([]):
        for _ in range(count):
            world = world.step()[2]


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_census_rooms_answer_as_counted_rooms_under_las(trace: Trace, nodes: int) -> None:
    with compared([]):
        simulate(trace, TraceCluster(nodes), LAS, SimConfig(cycle_on_events=True))


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_cycles_decide_as_with_counted_rooms(world: World, count: int) -> None:
    world.assert_cycles_alike(count, unread)


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_las_runs_decide_as_with_counted_rooms(trace: Trace, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), LAS, config)
    with unread():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs


def test_a_las_backlog_reads_its_rooms_from_the_censuses() -> None:
    """Under a las backlog the trial loop's rooms are census-read, and some say no (the
    placement is not tried yet) and some yes."""
    jobs = [TraceJob(f"j{n}", 10.0 * n, 5_000.0 + 300.0 * (n % 7), 1 + n % 2,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    asked: list[bool] = []
    with compared(asked):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), LAS,
                 SimConfig(cycle_on_events=True))
    assert True in asked
