"""Resource flavors in the simulator (issue 16): its model lives across cycles, so a job's
flavor is chosen when it starts and given back when it ends, with no snapshot in between."""

from __future__ import annotations

from shoal.api import Node, ResourceLimit, Resources, VirtualCluster
from shoal.api.flavors import FlavorQuota, ResourceFlavor
from shoal.scheduler import Profile
from shoal.sim.loaders.cluster import ClusterDescription
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

EXACT = SimConfig(cycle_on_events=True, check_invariants=True)


def test_jobs_fill_the_first_flavors_quota_then_the_next_and_wait_for_either() -> None:
    """team may use 4 A100 GPUs (of the node's 8) and all 8 H100 GPUs. Eight 2-GPU jobs of
    100 s arrive a second apart: j0 and j1 take the A100 quota, j2–j5 fall back to H100, and
    j6 and j7 wait until j0 and j1 end and give back A100 quota — not for the 4 A100 GPUs
    that stay idle beyond team's max."""
    nodes = [Node("a", Resources.of(cpu=64_000, memory=65_536, gpu=8), {"gpu-type": "a100"}),
             Node("h", Resources.of(cpu=64_000, memory=65_536, gpu=8), {"gpu-type": "h100"})]
    flavors = (ResourceFlavor("a100", {"gpu-type": "a100"}),
               ResourceFlavor("h100", {"gpu-type": "h100"}))
    team = VirtualCluster("team", flavors=(
        FlavorQuota("a100", Resources.of(gpu=4), ResourceLimit.of({"gpu": 4})),
        FlavorQuota("h100", Resources.of(gpu=8))))
    cluster = ClusterDescription.of(nodes, [team], resource_flavors=flavors)
    jobs = [TraceJob(f"j{i}", float(i), 100.0, 1, Resources.of(cpu=2000, gpu=2), queue="team")
            for i in range(8)]
    result = simulate(Trace.of(jobs, "hand"), cluster, Profile.load("default"), EXACT)
    starts = {r.name: r.first_start for r in result.jobs}
    assert starts == {"j0": 0.0, "j1": 1.0, "j2": 2.0, "j3": 3.0, "j4": 4.0, "j5": 5.0,
                      "j6": 100.0, "j7": 101.0}
