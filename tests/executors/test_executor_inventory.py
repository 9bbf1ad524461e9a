"""Node inventory from recorded nvidia-smi outputs, and without nvidia-smi."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from shoal.api.objects import GPU_TYPE_LABEL
from shoal.executors.inventory import (
    NVIDIA_SMI_QUERY,
    GpuInfo,
    detect_gpus,
    detect_local_node,
    normalise_gpu_model,
)

DATA = Path(__file__).with_name("data")


def recorded(name: str, returncode: int = 0) -> Any:
    def run(args: list[str], **kwargs: Any) -> SimpleNamespace:
        assert tuple(args) == NVIDIA_SMI_QUERY
        return SimpleNamespace(returncode=returncode, stdout=(DATA / name).read_text())
    return run


def no_nvidia_smi(args: list[str], **kwargs: Any) -> Any:
    raise FileNotFoundError(2, "No such file or directory", args[0])


def test_eight_a100s() -> None:
    node = detect_local_node("box", run=recorded("nvidia-smi-8xA100.csv"))
    assert node.name == "box"
    assert node.capacity.gpu == 8
    assert node.labels[GPU_TYPE_LABEL] == "A100-SXM4-80GB"
    gpus = detect_gpus(recorded("nvidia-smi-8xA100.csv"))
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[0] == GpuInfo(0, "NVIDIA A100-SXM4-80GB")


def test_one_h100() -> None:
    node = detect_local_node("box", run=recorded("nvidia-smi-1xH100.csv"))
    assert node.capacity.gpu == 1
    assert node.gpu_type == "H100-80GB-HBM3"


def test_no_nvidia_smi_means_no_gpus() -> None:
    node = detect_local_node(run=no_nvidia_smi)
    assert node.capacity.gpu == 0
    assert GPU_TYPE_LABEL not in node.labels
    assert node.name  # the host name
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert node.capacity.cpu == (cpus or 1) * 1000
    assert node.capacity.memory == psutil.virtual_memory().total // 2**20


@pytest.mark.parametrize("failure", [
    recorded("nvidia-smi-1xH100.csv", returncode=9),
    lambda *a, **k: (_ for _ in ()).throw(subprocess.TimeoutExpired("nvidia-smi", 15)),
])
def test_failing_nvidia_smi_means_no_gpus(failure: Any) -> None:
    assert detect_local_node("box", run=failure).capacity.gpu == 0


def test_mixed_models_and_noise() -> None:
    out = "No devices were found\n1, Tesla V100-SXM2-32GB\n0, NVIDIA A100-SXM4-40GB\n"
    node = detect_local_node("box", run=lambda *a, **k: SimpleNamespace(returncode=0, stdout=out))
    assert node.capacity.gpu == 2
    assert node.labels[GPU_TYPE_LABEL] == "A100-SXM4-40GB+V100-SXM2-32GB"


@pytest.mark.parametrize(("model", "label"), [
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
    ("NVIDIA H100 80GB HBM3", "H100-80GB-HBM3"),
    ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
    ("NVIDIA GeForce RTX 4090", "GeForce-RTX-4090"),
])
def test_model_normalisation(model: str, label: str) -> None:
    assert normalise_gpu_model(model) == label
