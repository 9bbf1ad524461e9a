"""Online services in the simulator (issue 17, seed 002): a service with a quiet night
over simulated days. The simulated clock's 0 is midnight. Training uses the service's
night-time difference, hands it back `handBack` seconds before the service's busy hours
(elastic surplus first, then whole jobs), and resumes the next night; the run ends once
every job but the service has ended. The same trace loads from a native YAML trace."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from shoal.api import Elasticity, Node, Resources
from shoal.api.services import QuietWindow, Service
from shoal.scheduler import Profile
from shoal.sim.loaders.native import load_native
from shoal.sim.result import JobRecord, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceError, TraceJob
from shoal.sim.work import WorkModel

HOUR = 3600.0
GPU = Resources.of(cpu=1000, memory=1024, gpu=1)
NIGHT = Service("worker", (QuietWindow(0.0, 6 * HOUR, 1),), hand_back=1800.0)
"""Quiet from midnight to 06:00, needing 1 of its 4 replicas; back at 4 from 05:30."""


class Cluster:
    nodes = (Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=4)),)
    virtual_clusters = ()
    priority_classes = ()


def web() -> TraceJob:
    return TraceJob("web", 0.0, math.inf, 4, GPU, elastic=Elasticity("worker", 1, 4),
                    service=NIGHT)


CONFIG = SimConfig(cycle_on_events=True, check_invariants=True, until=10 * 24 * HOUR,
                   work=WorkModel(checkpoint_interval=600.0))
"""Checkpoints every 10 min: a job keeps its work when it hands GPUs back."""


def run(jobs: list[TraceJob]) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), Cluster(), Profile.default(), CONFIG)


def record(result: SimResult, name: str) -> JobRecord:
    [found] = [j for j in result.jobs if j.name == name]
    return found


def busy_at(result: SimResult, t: float) -> int:
    return [s.busy_gpus for s in result.samples if s.time <= t][-1]


def test_training_uses_the_night_and_hands_back_before_morning() -> None:
    # 10 h of work on 3 GPUs: more than one night holds, so it runs over two nights.
    train = TraceJob("train", 600.0, 10 * HOUR, 3, GPU, priority_class="experiment")
    result = run([web(), train])
    job = record(result, "train")
    assert [j.name for j in result.jobs] == ["train"]  # the service is no job record
    assert job.first_start == pytest.approx(600.0)  # the service's quiet difference
    first, *later = job.held
    # It gives its GPUs back at 05:30, the hand-back, before the 06:00 busy hours.
    assert (first.start, first.end, first.gpus) == (600.0, pytest.approx(5.5 * HOUR), 3)
    assert busy_at(result, 6 * HOUR) == 4  # the service at its full size
    assert job.preemptions == 1
    # It waits through the day and resumes when the next night begins.
    assert later and later[0].start == pytest.approx(24 * HOUR)
    assert job.end is not None and 24 * HOUR < job.end < 30 * HOUR
    # The run ended with it: the service's windows do not keep it going.
    assert result.samples[-1].time <= job.end


def test_a_job_that_never_fits_the_night_stops_at_until() -> None:
    # No checkpoints: each hand-back loses the night's work, so it can never finish; the
    # run stops at `until` instead of replaying nights forever.
    train = TraceJob("train", 600.0, 10 * HOUR, 3, GPU, priority_class="experiment")
    config = SimConfig(cycle_on_events=True, until=3 * 24 * HOUR)
    result = simulate(Trace.of([web(), train], "hand"), Cluster(), Profile.default(), config)
    job = record(result, "train")
    assert job.end is None and job.preemptions == 3
    assert [h.start for h in job.held] == [600.0, 24 * HOUR, 48 * HOUR]


def test_elastic_surplus_is_taken_before_a_whole_job() -> None:
    # A service of 3 replicas (1 at night): at night 3 GPUs are free; `stretchy` (normal,
    # elastic 1-2) takes 2, `small` (experiment) 1. At the hand-back the service needs 2
    # more: stretchy's surplus goes first though it ranks above small, then whole jobs,
    # lowest priority first: small. Stretchy runs on through the day at 1.
    three = TraceJob("web", 0.0, math.inf, 3, GPU, elastic=Elasticity("worker", 1, 3),
                     service=NIGHT)
    stretchy = TraceJob("stretchy", 600.0, 20 * HOUR, 2, GPU, priority_class="normal",
                        elastic=Elasticity("worker", 1, 2))
    small = TraceJob("small", 700.0, 20 * HOUR, 1, GPU, priority_class="experiment")
    result = run([three, stretchy, small])
    grown, small_run = record(result, "stretchy"), record(result, "small")
    assert [(h.start, h.end, h.gpus) for h in grown.held[:2]] == [
        (600.0, pytest.approx(5.5 * HOUR), 2), (pytest.approx(5.5 * HOUR), 24 * HOUR, 1)]
    assert small_run.held[0].end == pytest.approx(5.5 * HOUR)
    assert small_run.held[1].start == pytest.approx(24 * HOUR)  # back the next night
    assert busy_at(result, 12 * HOUR) == 4  # the service's 3 and stretchy's 1


NATIVE = """\
apiVersion: shoal/v1
kind: Service
metadata: {name: web, arrivalTime: 0}
spec:
  service:
    schedule: [{from: "00:00", to: "06:00", replicas: 1}]
    handBack: 30m
  taskGroups:
    - {name: frontend, replicas: 4, resources: {cpu: 1, memory: 1Gi, gpu: 1}}
---
apiVersion: shoal/v1
kind: Job
metadata: {name: train, arrivalTime: 600, duration: 36000}
spec:
  priorityClassName: experiment
  taskGroups:
    - {name: worker, replicas: 3, resources: {cpu: 1, memory: 1Gi, gpu: 1}}
"""


def test_a_native_trace_declares_a_service(tmp_path: Path) -> None:
    path = tmp_path / "trace.yaml"
    path.write_text(NATIVE, encoding="utf-8")
    trace = load_native(path)
    served = next(j for j in trace.jobs if j.name == "web")
    assert served.service == NIGHT and served.duration == math.inf
    assert served.elastic == Elasticity("worker", 1, 4)
    assert served.to_job().priority_class == "production"
    assert not served.to_job().evictable
    result = simulate(trace, Cluster(), Profile.default(), CONFIG)
    assert record(result, "train").held[0].end == pytest.approx(5.5 * HOUR)
    path.write_text(NATIVE.replace("arrivalTime: 0}", "arrivalTime: 0, duration: 5}"),
                    encoding="utf-8")
    with pytest.raises(TraceError, match=r"metadata\.duration.*not allowed on a service"):
        load_native(path)
