"""Node inventory: what this machine offers the scheduler.

It owns turning the local machine into one `shoal.api.Node`: CPUs (the ones this process may
run on), memory, and NVIDIA GPUs as reported by `nvidia-smi`. It does not read cluster files
(a cluster file that slices this host into several nodes, or declares GPUs that are not
physically present, is layered on top of this by the caller).

The `gpu-type` label is the GPU model as `nvidia-smi` names it, normalised so that it can be
written in a node selector without quoting: the vendor prefixes `NVIDIA ` and `Tesla ` are
dropped and runs of spaces become `-`.

    "NVIDIA A100-SXM4-80GB"  → "A100-SXM4-80GB"
    "NVIDIA H100 80GB HBM3"  → "H100-80GB-HBM3"
    "Tesla V100-SXM2-32GB"   → "V100-SXM2-32GB"

A node with GPUs of different models gets their normalised names, sorted and joined by `+`;
a node without GPUs gets no `gpu-type` label at all.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from shoal.api.objects import GPU_TYPE_LABEL, Node
from shoal.api.resources import Resources

NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader")
#: nvidia-smi can hang for a long time on a wedged driver; inventory must not.
NVIDIA_SMI_TIMEOUT = 15.0
_MIB = 2**20

#: The shape of `subprocess.run` that `detect_*` call; tests pass a fake returning recorded
#: output (an object with `returncode` and `stdout`).
Runner = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    """The device index, as CUDA_VISIBLE_DEVICES counts it."""
    name: str
    """The model exactly as nvidia-smi reports it."""

    @property
    def gpu_type(self) -> str:
        return normalise_gpu_model(self.name)


def normalise_gpu_model(name: str) -> str:
    """The `gpu-type` label value for a model name (see the module docstring)."""
    model = name.strip()
    for prefix in ("NVIDIA ", "Tesla "):
        if model.startswith(prefix):
            model = model[len(prefix):].strip()
    return re.sub(r"\s+", "-", model)


def parse_nvidia_smi(output: str) -> list[GpuInfo]:
    """Parse `nvidia-smi --query-gpu=index,name --format=csv,noheader` output."""
    gpus: list[GpuInfo] = []
    for line in output.splitlines():
        if not line.strip():
            continue
        index, _, name = line.partition(",")
        try:
            gpus.append(GpuInfo(int(index.strip()), name.strip()))
        except ValueError:
            continue  # a warning line ("No devices were found", driver notices): not a GPU
    return sorted(gpus, key=lambda g: g.index)


def detect_gpus(run: Runner = subprocess.run) -> list[GpuInfo]:
    """The GPUs nvidia-smi reports; none when nvidia-smi is missing, fails or hangs."""
    try:
        result = run(list(NVIDIA_SMI_QUERY), capture_output=True, text=True,
                     timeout=NVIDIA_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return []  # no binary, no permission, or a timeout: this node has no usable GPU
    if result.returncode != 0:
        return []  # installed but no driver / no device: same thing for the scheduler
    return parse_nvidia_smi(str(result.stdout))


def gpu_type_label(gpus: Sequence[GpuInfo]) -> str | None:
    models = sorted({g.gpu_type for g in gpus})
    return "+".join(models) if models else None


def _cpu_count() -> int:
    # The CPUs this process may use (a cgroup/taskset-restricted container sees fewer than
    # the host has); os.cpu_count where sched_getaffinity does not exist (macOS).
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def detect_local_node(name: str | None = None, run: Runner = subprocess.run) -> Node:
    """This machine as one node: CPUs in millicores, memory in MiB, its GPUs and their
    `gpu-type` label. `name` defaults to the host name."""
    gpus = detect_gpus(run)
    capacity = Resources.of(cpu=_cpu_count() * 1000,
                            memory=int(psutil.virtual_memory().total) // _MIB,
                            gpu=len(gpus))
    labels: dict[str, str] = {}
    label = gpu_type_label(gpus)
    if label is not None:
        labels[GPU_TYPE_LABEL] = label
    return Node(name or socket.gethostname(), capacity, labels)
