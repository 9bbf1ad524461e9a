"""A victim index kept by rank and brought up to date job by job (issue 18, ninth round) is
the one built afresh.

1. `QueueVictims.put` and `drop`, in any order and on a copy handed to an execution
   (`renewed`), leave an index that answers as one built from its final jobs: the same
   units per job, by rank worst first; the same `behind` for every rank; the same `gains`
   for every prefix `behind` gives (whether or not the sums were asked before the
   changes); the same offer in the score's order. The index it was renewed from is left
   as it was.
2. The running table names every job whose filing changed in a virtual cluster since a
   stamp (`RunningTable.changed_since`): in random `las` traces replayed by the simulator,
   a job filed, re-filed at another rank or with other tasks, or dropped between two
   refreshes is among those it names (or it says it forgot), and every job it leaves out
   is filed as it was.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.resources import Resources
from shoal.scheduler.running_table import RunningTable
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import VictimUnit
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace

from .test_kept_indexes import LAS, TraceCluster, traces

RULES = settings(max_examples=60, deadline=None)


class Job:
    """A stand-in for a running job: the index reads a unit's job as a key only."""

    def __init__(self, name: str, gpus: int) -> None:
        self.name = name
        self.gpus = gpus


def units_of(job: Job, count: int) -> list[VictimUnit]:
    return [VictimUnit(job, (), None, seq) for seq in range(count)]  # type: ignore[arg-type]


def score(units: list[VictimUnit]) -> list[VictimUnit]:
    """A score ranking by rank first (as the victims' score does), then by job and seq."""
    return sorted(units, key=lambda u: (-RANKS[u.job.name][0], u.job.name, u.seq))


RANKS: dict[str, tuple[int]] = {}


def frees(unit: VictimUnit) -> int:
    return int(unit.job.gpus)


def holds(unit: VictimUnit) -> tuple[str, list[tuple[str, Resources]]]:
    """A unit's charge (by its job's size) and tasks: one per seq, on a node of its own or
    one it shares with other jobs."""
    gpus = int(unit.job.gpus)
    return f"vc{gpus % 2}", [(f"n{(gpus + seq) % 3}", Resources(cpu=seq, gpu=gpus))
                             for seq in range(unit.seq + 1)]


def summed(units: list[VictimUnit]) -> tuple[dict[str, Resources], set[str]]:
    out: dict[str, Resources] = {}
    charged = set()
    for unit in units:
        charge, tasks = holds(unit)
        charged.add(charge)
        for node, request in tasks:
            out[node] = out.get(node, Resources()) + request
    return out, charged


def built(jobs: dict[str, tuple[Job, tuple[int], int]], prefixes: bool) -> QueueVictims:
    units: list[VictimUnit] = []
    ranks: list[tuple[Any, ...]] = []
    for job, rank, count in jobs.values():
        given_units = units_of(job, count)
        units.extend(given_units)
        ranks.extend([rank] * count)
    return QueueVictims(units, lambda u: (), score, prefixes=prefixes, ranks=ranks)


def answers(index: QueueVictims) -> tuple[Any, ...]:
    by_job = sorted((u.job.name, u.seq) for u in index.units)
    ranks = index.ranks
    behind = [index.behind((r,)) for r in range(-1, 6)]
    gains = [index.gains("pools", count, frees) for count in behind]
    offered = [[(u.job.name, u.seq) for u in index.offered(count)] for count in behind]
    in_order = [[(u.job.name, u.seq) for u in index.in_order(count)] for count in behind]
    assert in_order == offered
    held = [index.held(count, holds) for count in behind]
    assert held == [summed(index.prefix(count)) for count in behind]
    return by_job, ranks, behind, gains, offered, in_order, held


changes = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 4), st.integers(0, 3)),
                   max_size=30)


@RULES
@given(first=changes, then=changes, asked=st.booleans(), prefixes=st.booleans())
def test_an_index_changed_job_by_job_is_the_one_built_afresh(
        first: list[tuple[int, int, int]], then: list[tuple[int, int, int]], asked: bool,
        prefixes: bool) -> None:
    RANKS.clear()
    jobs: dict[str, tuple[Job, tuple[int], int]] = {}
    made = {n: Job(f"j{n}", 1 + n % 3) for n in range(8)}
    index = built({}, prefixes)
    if asked:
        index.gains("pools", 0, frees)

    def apply(target: QueueVictims, steps: list[tuple[int, int, int]]) -> None:
        for n, rank, count in steps:
            job = made[n]
            target.drop(job)  # type: ignore[arg-type]
            jobs.pop(job.name, None)
            if count:
                RANKS[job.name] = (rank,)
                jobs[job.name] = (job, (rank,), count)
                target.put(job, (rank,), units_of(job, count))  # type: ignore[arg-type]
            assert answers(target) == answers(built(jobs, prefixes))

    apply(index, first)
    before = answers(index)
    kept, ranks = dict(jobs), dict(RANKS)
    copy = index.renewed(score, prefixes)
    apply(copy, then)
    jobs.clear()
    jobs.update(kept)
    RANKS.clear()
    RANKS.update(ranks)
    assert answers(index) == before == answers(built(jobs, prefixes))


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_the_table_names_every_job_filed_anew_since_a_stamp(trace: Trace, nodes: int
                                                             ) -> None:
    refresh = RunningTable.refresh
    seen: dict[int, dict[str, tuple[int, dict[Any, Any]]]] = {}
    named = [0]

    def filings(table: RunningTable, queue: str) -> dict[Any, Any]:
        out = {}
        for job in table.members(queue):
            filed = table._filed[job]
            out[job] = (filed.rank, filed.count, filed.last, filed.spec)
        return out

    def checked(table: RunningTable, *args: Any) -> None:
        refresh(table, *args)
        last = seen.setdefault(id(table), {})
        for queue in {*last, *table.queues()}:
            now = filings(table, queue)
            if queue in last:
                stamp, before = last[queue]
                changed = table.changed_since(queue, stamp)
                if changed is not None:
                    moved = {job for job in {*before, *now} if before.get(job) != now.get(job)}
                    assert moved <= set(changed)
                    named[0] += len(changed)
            last[queue] = (table.queue_stamp(queue), now)

    with patch.object(RunningTable, "refresh", checked):
        simulate(trace, TraceCluster(nodes), LAS, SimConfig(cycle_on_events=True))
