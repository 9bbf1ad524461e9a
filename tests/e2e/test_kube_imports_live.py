"""The imported formats' examples (examples/imports/) run through a real `shoal up` on the
local executor: a Volcano Job, a Kubernetes Job with Kueue's labels and a Volcano PodGroup
with its Pods are submitted as their users wrote them, run to success, keep their original
documents (`GET /api/v1/jobs/{name}/original`) and show their labels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from shoal_documents import node_yaml
from shoal_up_process import Up, shoal_up

from shoal.api import JobState
from shoal.client import ShoalApiError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WAIT_S = 60.0
"""A safety net only: `wait` returns as soon as the job has ended."""


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("imports")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home) as server:
        yield server


def _log(up: Up, job: str, task: str) -> str:
    with up.client() as shoal, shoal.logs(job, task) as stream:
        return "".join(stream)


def test_a_volcano_job_runs_and_keeps_its_original(up: Up) -> None:
    path = EXAMPLES / "imports" / "volcano-job.yaml"
    with up.client() as shoal:
        job = shoal.submit(path)
        assert job.jobs == ("mnist-volcano",) and job.imported == "volcano-job"
        done = shoal.wait("mnist-volcano", timeout=WAIT_S)
        assert done.state is JobState.SUCCEEDED, done.events
        assert done.labels == {"team": "vision"}
        assert done.annotations == {"example.com/owner": "ana"}
        original = shoal.original("mnist-volcano")
    assert original.format == "volcano-job"
    assert original.document == yaml.safe_load(path.read_text())
    assert "worker 1: lr=0.01" in _log(up, "mnist-volcano", "worker-1")


def test_a_kueue_job_runs_with_its_completion_index(up: Up) -> None:
    with up.client() as shoal:
        job = shoal.submit(EXAMPLES / "imports" / "kueue-job.yaml")
        assert (job.queue, job.priority_class, job.time_limit) == (
            "default", "production", 600)
        done = shoal.wait("sample-kueue", timeout=WAIT_S)
        assert done.state is JobState.SUCCEEDED, done.events
        assert shoal.original("sample-kueue").format == "kubernetes-job"
    assert _log(up, "sample-kueue", "main-1").strip() == "index 1"


def test_a_pod_group_runs_as_one_gang(up: Up) -> None:
    with up.client() as shoal:
        shoal.submit(EXAMPLES / "imports" / "volcano-podgroup.yaml")
        done = shoal.wait("trainer", timeout=WAIT_S)
        assert done.state is JobState.SUCCEEDED, done.events
        assert [(g.name, g.replicas) for g in done.groups] == [("trainer", 2)]
    assert "of 2" in _log(up, "trainer", "trainer-0")


def test_an_image_is_refused_by_default(up: Up, tmp_path: Path) -> None:
    text = (EXAMPLES / "imports" / "kueue-job.yaml").read_text().replace(
        "name: sample-kueue", "name: with-image").replace(
        "        - name: main\n", "        - name: main\n          image: busybox:1.36\n")
    path = tmp_path / "image.yaml"
    path.write_text(text)
    with up.client() as shoal:
        with pytest.raises(ShoalApiError) as info:
            shoal.submit(path)
        assert info.value.status == 422
        assert "runs no container images" in str(info.value)
        with pytest.raises(ShoalApiError):
            shoal.get_job("with-image")


def test_with_images_ignored_the_command_runs_on_the_host(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "cluster.yaml").write_text(node_yaml())
    path = tmp_path / "image.yaml"
    path.write_text((EXAMPLES / "imports" / "kueue-job.yaml").read_text().replace(
        "        - name: main\n", "        - name: main\n          image: busybox:1.36\n"))
    with shoal_up(home, "--images", "ignore") as up, up.client() as shoal:
        job = shoal.submit(path)
        assert job.groups[0].image == "busybox:1.36"
        done = shoal.wait("sample-kueue", timeout=WAIT_S)
        assert done.state is JobState.SUCCEEDED, done.events
        with shoal.logs("sample-kueue", "main-0") as stream:
            assert "".join(stream).strip() == "index 0"
