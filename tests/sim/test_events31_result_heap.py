"""The simulator builds its result while the replay's heap is still frozen (issue 18): made
after leaving `long_lived_heap`, the records' allocations set off collections that walk the
whole replay's heap again (on the full Philly trace most of the result's cost)."""

from __future__ import annotations

import gc
from dataclasses import dataclass

from shoal.api import Node, Resources
from shoal.api.objects import PriorityClass, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim import collector
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, Simulator
from shoal.sim.trace import Trace, TraceJob


@dataclass(frozen=True)
class _Cluster:
    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()


class _Watched(Simulator):
    """Notes whether full collections freeze their survivors as the result is built."""

    frozen_while_built: bool | None = None

    def _result(self) -> SimResult:
        self.frozen_while_built = collector._freeze_after_full in gc.callbacks
        return super()._result()


def test_the_result_is_built_inside_the_long_lived_heap_and_it_is_left_after() -> None:
    cluster = _Cluster((Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=4)),))
    jobs = [TraceJob(f"j{i}", float(i), 30.0, 1, Resources.of(cpu=1000, gpu=2))
            for i in range(4)]
    sim = _Watched(Trace.of(jobs, "hand"), cluster, Profile.load("las"), SimConfig())
    result = sim.run()
    assert sim.frozen_while_built is True
    assert collector._freeze_after_full not in gc.callbacks
    assert gc.get_freeze_count() == 0
    assert all(r.end is not None for r in result.jobs)
