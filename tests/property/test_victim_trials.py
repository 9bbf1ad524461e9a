"""A preemption's units judged as a whole (`VictimTrials._worth_evicting`) say what the
trial loop would: evicting them one after another in a statement, a placement tried as soon
as `_worth_trying` holds.

1. Wherever the whole list is judged (`_judged_whole`), its answer is the plain loop's —
   some prefix of the units is worth a trial placement — in random worlds (virtual-cluster
   trees with guarantees and limits, lending, priority classes, gangs) under the profiles
   that preempt and reclaim, and in random traces replayed under `las`; and so is the
   judgement told before the offer is listed, from the victim index's sums per rank
   (`_judged_early`).
2. Runs decide the same with the whole-list judgement and without it (`judge_whole`, a
   test knob): every cycle's binds, evictions, resizes and reasons in random worlds, and
   every job's life in random `las` traces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources, VirtualCluster
from shoal.api.objects import BUILTIN_PRIORITY_CLASSES, Job, TaskGroup
from shoal.api.resources import ResourceLimit
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.actions.victim_listing import VictimListing
from shoal.scheduler.actions.victim_trials import Trial, VictimTrials
from shoal.scheduler.gang_choice import GangNeed, Room, least_gpus, least_request
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import VictimUnit
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import World, worlds
from .test_kept_indexes import LAS, PER_GPU, TraceCluster, traces

RULES = settings(max_examples=30, deadline=None)
PREEMPTING = ("lend-reclaim", "evict-first", "las", "las-elastic", "elastic")


def trial_loop(trials: VictimTrials, trial: Trial, units: list[VictimUnit],
               preemptor: JobInfo, need: GangNeed, quota_bound: bool) -> bool:
    """The oracle: evict the units one by one in a statement until a placement is worth
    trying, then put everything back."""
    session = trials.session
    by_name = session.cluster.by_name
    statement = session.statement()
    room = Room(session, preemptor, need)
    gained = 0
    worth = False
    for unit in units:
        trials._evict(statement, unit, preemptor)
        gained += trial.gains[id(unit)]
        room.freed([by_name[t.node] for t in unit.tasks])
        if trials._worth_trying(trial, gained, preemptor, need, quota_bound, room):
            worth = True
            break
    statement.discard()
    return worth


@contextmanager
def compared(judged: list[bool], early: list[bool] | None = None) -> Iterator[None]:
    """Every whole-list judgement checked against the trial loop; `judged` collects the
    answers of those judged so, and `early` those told before the offer is listed."""
    fast = VictimTrials._worth_evicting

    def checked(self: VictimTrials, trial: Trial, units: list[VictimUnit],
                preemptor: JobInfo, need: GangNeed, quota_bound: bool) -> bool:
        answer = fast(self, trial, units, preemptor, need, quota_bound)
        if self._judged_whole(preemptor, units, quota_bound):
            assert answer == trial_loop(self, trial, units, preemptor, need, quota_bound)
            judged.append(answer)
        return answer

    told = VictimListing._judged_early

    def checked_early(self: Preemption, preemptor: JobInfo, need: GangNeed,
                      index: QueueVictims, behind: int, quota_bound: bool) -> bool | None:
        answer = told(self, preemptor, need, index, behind, quota_bound)
        if answer is None:
            return None
        # What the search would have listed and judged: the useful units it is offered,
        # in the score's order.
        by_name = self.session.cluster.by_name
        pools, nodes = self._pool_nodes(preemptor)
        units = index.offered(behind)
        helps = {u.chain for u in units
                 if quota_bound or any(by_name[t.node].ordinal in nodes for t in u.tasks)}
        useful = [u for u in units if u.chain in helps]
        gains = {id(u): sum(u.job.job.group(t.ref.group).resources.gpu for t in u.tasks
                            if by_name[t.node].ordinal in nodes) for u in useful}
        trial = Trial(self._free_on(pools, nodes), least_gpus(preemptor, need),
                      least_request(preemptor, need), gains)
        assert self._judged_whole(preemptor, useful, quota_bound)
        assert answer == fast(self, trial, useful, preemptor, need, quota_bound) \
            == trial_loop(self, trial, useful, preemptor, need, quota_bound)
        judged.append(answer)
        if early is not None:
            early.append(answer)
        return answer

    with patch.object(VictimTrials, "_worth_evicting", checked), \
            patch.object(VictimListing, "_judged_early", checked_early):
        yield


@contextmanager
def unjudged() -> Iterator[None]:
    with patch.object(VictimTrials, "judge_whole", False):
        yield


def cycles(world: World, count: int) -> Iterator[World]:
    """The world after each of `count` cycles, applying each cycle's decisions."""
    for _ in range(count):
        world = world.step()[2]
        yield world


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_the_whole_list_judges_as_the_trial_loop(world: World, count: int) -> None:
    with compared([]):
        for _ in cycles(world, count):
            pass


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_the_whole_list_judges_as_the_trial_loop_under_las(trace: Trace, nodes: int) -> None:
    with compared([]):
        simulate(trace, TraceCluster(nodes), LAS, SimConfig(cycle_on_events=True))


@RULES
@given(world=worlds(profiles=PREEMPTING, limits=True), count=st.integers(1, 3))
def test_cycles_decide_as_without_the_whole_list(world: World, count: int) -> None:
    world.assert_cycles_alike(count, unjudged)


@RULES
@given(trace=traces(), nodes=st.integers(1, 3))
def test_las_runs_decide_as_without_the_whole_list(trace: Trace, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), LAS, config)
    with unjudged():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs


def test_a_las_backlog_is_judged_whole() -> None:
    """Under a las backlog, searches that pass the gains test are judged as a whole, and
    some end there without a trial eviction: most before their offer is listed."""
    jobs = [TraceJob(f"j{n}", 10.0 * n, 5_000.0 + 300.0 * (n % 7), 1 + n % 2,
                     PER_GPU.scale(1 + n % 3), queue="a" if n % 3 else "b", gang=True)
            for n in range(60)]
    judged: list[bool] = []
    early: list[bool] = []
    with compared(judged, early):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), LAS,
                 SimConfig(cycle_on_events=True))
    assert False in judged
    assert False in early and True in early


def test_its_quota_can_turn_the_whole_list_down() -> None:
    """Evicting the low-priority job frees the GPUs and the room the preemptor needs, but
    its virtual cluster's CPU ceiling still refuses it: judged whole, nothing is evicted."""
    def job(name: str, gpus: int, cores: int, priority: str, at: float) -> Job:
        return Job(name, (TaskGroup("main", 1, Resources.of(cpu=cores * 1000, memory=1000,
                                                            gpu=gpus)),),
                   queue="a", priority_class=priority, submitted=at)

    ceiling = ResourceLimit((("cpu", 10_000),))
    world = World((Node("n0", Resources.of(cpu=64_000, memory=64_000, gpu=8)),),
                  (VirtualCluster("a", max=ceiling),), BUILTIN_PRIORITY_CLASSES,
                  (job("v", 4, 1, "experiment", 0.0), job("w", 4, 8, "normal", 1.0)),
                  "evict-first")
    world = world.step()[2]
    world = world.with_jobs([*world.jobs, job("p", 4, 4, "normal", 2.0)])
    judged: list[bool] = []
    with compared(judged):
        decisions = world.step()[1]
    assert judged == [False]
    assert not decisions.evictions and not decisions.binds


def test_reclaim_judges_its_borrowers_whole() -> None:
    """A virtual cluster reclaiming its guarantee from a borrower asks the same judgement
    (its quota is not read: it is owed what it asks), and then evicts one borrower."""
    def job(name: str, queue: str, at: float) -> Job:
        return Job(name, (TaskGroup("main", 1, Resources.of(cpu=4000, memory=4000, gpu=4)),),
                   queue=queue, submitted=at)

    owed = Resources.of(cpu=8000, memory=8000, gpu=4)
    world = World((Node("n0", Resources.of(cpu=64_000, memory=64_000, gpu=8)),),
                  (VirtualCluster("a", min=owed), VirtualCluster("b")), (),
                  (job("b1", "b", 0.0), job("b2", "b", 1.0)), "lend-reclaim")
    world = world.step()[2]
    world = world.with_jobs([*world.jobs, job("a1", "a", 2.0)])
    judged: list[bool] = []
    with compared(judged):
        decisions = world.step()[1]
    assert judged == [True]
    assert [e.task.job for e in decisions.evictions] == ["b2"]
