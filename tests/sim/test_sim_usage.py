"""Issue 17's decayed usage in the simulator: charged on the simulated clock, up to each
completion, and read by the `usage` plugin, so the user who used less goes first when GPUs
free up; under a profile without the plugin, submission order decides."""

from __future__ import annotations

import pytest

from shoal.api import Node, Resources
from shoal.core.usage import UsageKey
from shoal.scheduler import Profile
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, Simulator
from shoal.sim.trace import Trace, TraceJob

EXACT = SimConfig(cycle_on_events=True, check_invariants=True)
HALF_LIFE = 1000.0
USAGE = Profile.from_dict({
    "name": "usage-test",
    "actions": "enqueue, allocate",
    "tiers": [{"plugins": [{"name": "priority"},
                           {"name": "usage", "arguments": {"halfLife": HALF_LIFE}},
                           {"name": "gang"}]},
              {"plugins": [{"name": "predicates"}, {"name": "capacity"},
                           {"name": "placement"}]}]})


class Cluster:
    nodes = (Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8)),)
    virtual_clusters = ()
    priority_classes = ()


def job(name: str, at: float, duration: float, user: str) -> TraceJob:
    return TraceJob(name, at, duration, 8, Resources.of(cpu=1000, gpu=1), user=user)


TRACE = Trace.of([job("alice-a", 0.0, 1000.0, "alice"), job("alice-b", 10.0, 100.0, "alice"),
                  job("bob-a", 20.0, 100.0, "bob")], "hand")


def started(result: SimResult, name: str) -> float:
    [found] = [j for j in result.jobs if j.name == name]
    assert found.first_start is not None
    return found.first_start


def test_the_lighter_user_starts_first_when_gpus_free_up() -> None:
    simulator = Simulator(TRACE, Cluster(), USAGE, EXACT)
    result = simulator.run()
    assert started(result, "bob-a") == pytest.approx(1000.0)
    assert started(result, "alice-b") == pytest.approx(1100.0)
    # Charged at every cycle (each arrival, t=10 and t=20) and up to each completion
    # (t=1000, 1100, 1200), every charge decayed from then to the last one, t=1200, with a
    # 1000 s half-life.
    usage = simulator.model.usage
    assert usage.at == pytest.approx(1200.0)

    def left(at: float) -> float:
        return float(0.5 ** ((1200.0 - at) / HALF_LIFE))

    alice = usage.entries[UsageKey("default", "alice")].gpu
    bob = usage.entries[UsageKey("default", "bob")].gpu
    assert bob == pytest.approx(800.0 * left(1100.0), rel=1e-9)
    assert alice == pytest.approx(80.0 * left(10.0) + 80.0 * left(20.0)
                                  + 7840.0 * left(1000.0) + 800.0, rel=1e-9)


def test_without_the_plugin_submission_order_decides() -> None:
    result = Simulator(TRACE, Cluster(), Profile.load("default"), EXACT).run()
    assert started(result, "alice-b") == pytest.approx(1000.0)
    assert started(result, "bob-a") == pytest.approx(1100.0)
