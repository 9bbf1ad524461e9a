"""The Sedna examples (`examples/sedna/`) through a real `shoal up` on the local executor,
on its edge-cloud cluster file: the federated job's workers on the nodes they name, the
aggregator's address seen by them; the inference service restarted after its process is
killed and never preempted by a production training job; incremental learning's phases."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from shoal_up_process import Up, shoal_up, until

from shoal.api import JobState, TaskState
from shoal.client import ShoalClient
from shoal.executors.wrapper import PID_FILE
from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.imports import Foreign
from shoal.spec.imports.sedna import SednaImporter

SEDNA = Path(__file__).resolve().parents[2] / "examples" / "sedna"


@pytest.fixture
def up(tmp_path: Path) -> Any:
    (tmp_path / "cluster.yaml").write_text((SEDNA / "cluster.yaml").read_text())
    with shoal_up(tmp_path) as server:
        yield server


def nodes_of(shoal: ShoalClient, job: str) -> dict[str, str | None]:
    return {t.name: t.node for t in shoal.iter_tasks(job)}


def test_federated_learning_runs_pinned_and_its_trainers_reach_the_aggregator(up: Up) -> None:
    with up.client() as shoal:
        job = shoal.submit(SEDNA / "federated-learning.yaml")
        assert job.name == "surface-defect"
        done = shoal.wait(job.name, timeout=120)
        assert done.state is JobState.SUCCEEDED, done.events
        assert nodes_of(shoal, job.name) == {"aggregator-0": "cloud-0",
                                             "trainer-0-0": "edge-0", "trainer-1-0": "edge-1"}
        for trainer in ("trainer-0-0", "trainer-1-0"):
            seen = "".join(shoal.logs(job.name, task=trainer))
            assert re.search(r"aggregator at 127\.0\.0\.1:\d+$", seen.strip()), seen
        assert "aggregated 2 updates: 13.0" in "".join(shoal.logs(job.name, task="aggregator-0"))


def _pid(data: Path, job: str, group: str, attempt: int) -> int | None:
    found = [p for p in data.glob(f"executor/tasks/{job}/**/attempt-{attempt}/{PID_FILE}")
             if group in str(p.relative_to(data))]
    if len(found) != 1:
        return None
    return int(json.loads(found[0].read_text())["pid"])


TRAINING = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: urgent-training}
spec:
  priorityClassName: production
  taskGroups:
    - name: worker
      replicas: 1
      resources: {cpu: 2, memory: 64Mi}
      nodeSelector: {node-role: cloud}
      command: [python3, -c, "print('trained')"]
"""


def test_the_inference_service_is_restarted_after_a_kill_and_never_preempted(up: Up) -> None:
    data = up.home / ".shoal"
    with up.client() as shoal:
        name = shoal.submit(SEDNA / "joint-inference.yaml").name
        until("both models running", lambda: shoal.get_job(name).task_counts.get(
            TaskState.RUNNING) == 2)
        assert nodes_of(shoal, name) == {"cloud-0": "cloud-0", "edge-0": "edge-0"}
        until("the edge model answered by the cloud one", lambda: re.search(
            r"frame (\d+) helmet:\1\b", "".join(shoal.logs(name, task="edge-0"))))
        pid = until("the edge model's pid", lambda: _pid(data, name, "edge", 1))
        os.kill(pid, signal.SIGKILL)
        until("the edge model restarted", lambda: _pid(data, name, "edge", 2))
        job = until("the service running whole again", lambda: (
            j if (j := shoal.get_job(name)).task_counts.get(TaskState.RUNNING) == 2 else None))
        assert job.state is JobState.RUNNING
        events = " | ".join(e.cause for e in shoal.events(name))
        assert "restart 1 (a service restarts its failed tasks)" in events, (
            events, sorted(str(p) for p in data.glob(f"executor/tasks/{name}/**/{PID_FILE}")))

        training = shoal.submit(TRAINING).name  # needs cloud-0's two CPUs, one the service's
        waiting = until("the training job told why it waits", lambda: (
            j.pending_reason if (j := shoal.get_job(training)).pending_reason else None))
        assert shoal.get_job(training).state is JobState.PENDING, waiting
        assert shoal.get_job(name).task_counts.get(TaskState.RUNNING) == 2
        assert "evict" not in " ".join(e.cause.lower() for e in shoal.events(name))
        shoal.cancel(training)
        shoal.cancel(name)
        shoal.wait(name, timeout=60)


def _phases() -> list[dict[str, Any]]:
    data = yaml.safe_load((SEDNA / "incremental-learning.yaml").read_text())
    log = IssueLog()
    lowered = SednaImporter().lower(log, [Foreign(DocRef("incremental-learning.yaml", 1),
                                                  data)])
    assert not log.issues
    return [dict(doc) for x in lowered for doc in x.documents]


def test_incremental_learning_phases_each_run_as_lowered(up: Up) -> None:
    """Each phase as its own submission, the next once the one before has succeeded: what
    the gate (`dependsOn`) will do by itself."""
    with up.client() as shoal:
        train, evaluate, deploy = _phases()
        for phase in (train, evaluate):
            name = shoal.submit(phase).name
            assert shoal.wait(name, timeout=120).state is JobState.SUCCEEDED
        assert "num_of_samples > 500" in "".join(shoal.logs("incremental-train",
                                                            task="train-0"))
        assert "deploy when precision_delta > 0.1" in "".join(
            shoal.logs("incremental-eval", task="eval-0"))
        shoal.submit(deploy)
        until("the model served", lambda: "serving deploy-model" in "".join(
            shoal.logs("incremental-deploy", task="deploy-0")))
        assert nodes_of(shoal, "incremental-deploy") == {"deploy-0": "edge-0"}
        shoal.cancel("incremental-deploy")


def test_incremental_learning_phases_run_in_order_from_one_submission(up: Up) -> None:
    with up.client() as shoal:
        first = shoal.submit(SEDNA / "incremental-learning.yaml")
        names = first.raw.get("jobs")
        assert names == ["incremental-train", "incremental-eval", "incremental-deploy"]
        until("the model served", lambda: "serving deploy-model" in "".join(
            shoal.logs("incremental-deploy", task="deploy-0")))
        train, evaluate = (shoal.get_job(n) for n in names[:2])
        assert train.state is evaluate.state is JobState.SUCCEEDED
        starts = {n: min(t.start_time or 0 for t in shoal.iter_tasks(n)) for n in names}
        assert train.end_time is not None and evaluate.end_time is not None
        assert train.end_time <= starts["incremental-eval"]
        assert evaluate.end_time <= starts["incremental-deploy"]
        shoal.cancel("incremental-deploy")
