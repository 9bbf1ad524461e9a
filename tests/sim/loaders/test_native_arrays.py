"""A native trace job with `spec.array` is one trace job per index, each arriving and
lasting as its document says (`shoal sim` replays arrays as `shoal submit` submits them)."""

from __future__ import annotations

from pathlib import Path

from shoal.sim.loaders.native import load_native

TRACE = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: sweep, arrivalTime: 30, duration: 100, model: resnet50}
spec:
  array: "0-4:2"
  taskGroups:
    - {name: worker, replicas: 2, resources: {cpu: 1, gpu: 1}}
---
apiVersion: shoal/v1
kind: Job
metadata: {name: single, arrivalTime: 10, duration: 50}
spec:
  taskGroups:
    - {name: worker, replicas: 1, resources: {cpu: 1}}
"""


def test_an_array_in_a_trace_is_one_job_per_index(tmp_path: Path) -> None:
    path = tmp_path / "trace.yaml"
    path.write_text(TRACE)
    trace = load_native(path)
    jobs = {j.name: j for j in trace.jobs}
    assert set(jobs) == {"single", "sweep-0", "sweep-2", "sweep-4"}
    for name in ("sweep-0", "sweep-2", "sweep-4"):
        job = jobs[name]
        assert (job.submit_time, job.duration, job.replicas, job.model) \
            == (20.0, 100.0, 2, "resnet50")
    assert jobs["single"].submit_time == 0.0
