"""A cordon outlives a restart of `shoal up` (issue 21): the engine's listing of its nodes
at start does not lift it, and a job that fits only on the cordoned node waits with the
reason until `shoal node uncordon`, after which it runs."""

from __future__ import annotations

from pathlib import Path

from shoal_documents import job_yaml, node_yaml
from shoal_up_process import shoal_up, until

from shoal.api import JobState, NodePhase

JOB = job_yaml("after-restart", replicas=1, gpu=0, cpu="1", memory="64Mi",
               command="[/bin/true]")


def test_a_cordon_survives_a_restart_until_uncordoned(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(node_yaml("only"))
    with shoal_up(tmp_path) as up:
        assert up.client().cordon("only").state is NodePhase.CORDONED
        up.kill9()
        up.start()
        client = up.client()
        [node] = client.nodes()
        assert node.state is NodePhase.CORDONED
        client.submit(JOB)
        until("the job waits on the cordoned node",
              lambda: client.get_job("after-restart").pending_reason)
        assert client.get_job("after-restart").state is JobState.PENDING
        assert client.uncordon("only").state is NodePhase.READY
        until("the job runs once the node is uncordoned",
              lambda: client.get_job("after-restart").state is JobState.SUCCEEDED or None)
