"""A virtual cluster's stamp in the running table moves exactly when what it answers for
moves (issue 18, fourteenth round).

`RunningTable.queue_stamp` promises that while it stands the virtual cluster's jobs run the
same tasks under the same specs at the same ranks: the kept short and judged verdicts
(`shoal.scheduler.actions.short_searches`, `judged_searches`) and the kept victim indexes
(`shoal.scheduler.victim_index.KeptIndexes`) hold on it. A job re-filed because the time its
rank could move came, with nothing of its filing moved, no longer moves the stamp. Random
traces are replayed under `las` and `las-elastic` (cycles on every event and las crossing);
around every refresh of the table, per virtual cluster:

- stamp unmoved => the same jobs are filed there, each at the same rank, with the same
  tasks (count and last task by identity), spec, world facts and latest start;
- stamp moved => some job joined, left or changed one of those.

The second fails on the table as it was (an identical re-filing moved the stamp); the
first fails if a re-filing that moved a rank or a task were left without a stamp.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.scheduler.running_table import RunningTable
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace
from tests.property.test_running_table import PROFILES, TraceCluster, traces

RULES = settings(max_examples=30, deadline=None)


def filings(table: RunningTable) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Per virtual cluster, what each job filed there is filed with."""
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for job, filed in table._filed.items():
        out.setdefault(filed.queue, {})[job.name] = (
            filed.rank, filed.seen, filed.latest, id(filed.spec), filed.count,
            id(filed.last))
    return out


@RULES
@given(trace=traces(), nodes=st.integers(1, 3), name=st.sampled_from(sorted(PROFILES)))
def test_a_stamp_moves_exactly_when_its_filings_move(trace: Trace, nodes: int,
                                                      name: str) -> None:
    refresh = RunningTable.refresh

    def checked(self: RunningTable, *args: Any, **kwargs: Any) -> None:
        before = filings(self)
        stamps = {queue: self.queue_stamp(queue) for queue in before}
        refresh(self, *args, **kwargs)
        after = filings(self)
        for queue in set(before) | set(after):
            moved = self.queue_stamp(queue) != stamps.get(queue, 0)
            same = before.get(queue, {}) == after.get(queue, {})
            assert moved != same, (queue, moved)

    config = SimConfig(cycle_on_events=True, check_invariants=True)
    with patch.object(RunningTable, "refresh", checked):
        simulate(trace, TraceCluster(nodes), PROFILES[name], config)
