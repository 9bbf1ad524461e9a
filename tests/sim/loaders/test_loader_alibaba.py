"""The Alibaba openb loaders: pods (both GPU sharing models, skipped pods, QoS, GPU types)
and nodes, on the bundled samples and on malformed files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from shoal.api import GPU_TYPE_LABEL, Resources
from shoal.sim.loaders import GPU_MILLI, load_alibaba, load_alibaba_nodes
from shoal.sim.loaders.alibaba import NEVER_DELETED, NEVER_SCHEDULED, NOT_POSITIVE
from shoal.sim.trace import TraceError

PODS = "alibaba-openb-pods-sample.csv"
NODES = "alibaba-openb-nodes-sample.csv"
HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
          "deletion_time,scheduled_time\n")


def test_pods_sample_round_up(examples: Path) -> None:
    trace = load_alibaba(examples / PODS)
    assert len(trace) == 136
    assert trace.skipped == 14
    assert trace.skip_reasons == {NEVER_SCHEDULED: 14}
    first = trace.jobs[0]
    assert first.name == "openb-pod-0000"
    assert (first.submit_time, first.duration, first.replicas) == (0.0, 12537496.0, 1)
    assert first.per_task == Resources(cpu=12000, memory=16384, gpu=1)
    assert first.priority_class == "production"  # LS
    assert dict(first.node_selector) == {}
    by_name = {j.name: j for j in trace.jobs}
    # num_gpu 1, gpu_milli 460: 0.46 of a GPU, rounded up to one.
    assert by_name["openb-pod-0001"].per_task == Resources(cpu=6000, memory=12288, gpu=1)
    # An 8-GPU Burstable pod pinned to G2 GPUs.
    big = by_name["openb-pod-0017"]
    assert big.per_task == Resources(cpu=88000, memory=327680, gpu=8)
    assert big.priority_class == "normal"
    assert big.node_selector == {GPU_TYPE_LABEL: "G2"}
    assert big.duration == 10769854.0 - 9437497.0
    # CPU-only pod.
    assert by_name["openb-pod-0005"].per_task == Resources(cpu=20000, memory=65536)
    assert Counter(j.priority_class for j in trace.jobs) == {
        "experiment": 73, "production": 60, "normal": 3}
    assert Counter(j.node_selector.get(GPU_TYPE_LABEL) for j in trace.jobs) == {
        None: 107, "T4": 17, "G2": 6, "P100": 5, "G3": 1}
    keys = [(j.submit_time, j.name) for j in trace.jobs]
    assert keys == sorted(keys)


def test_pods_sample_milli(examples: Path) -> None:
    trace = load_alibaba(examples / PODS, gpu_sharing="milli")
    by_name = {j.name: j for j in trace.jobs}
    shared = by_name["openb-pod-0001"]
    assert shared.per_task == Resources.of(cpu=6000, memory=12288, extras={GPU_MILLI: 460})
    assert shared.gpus == 0
    assert by_name["openb-pod-0017"].per_task.get(GPU_MILLI) == 8000
    assert by_name["openb-pod-0005"].per_task.get(GPU_MILLI) == 0


def test_limit_keeps_the_earliest_and_counts_skips_over_the_file(examples: Path) -> None:
    full = load_alibaba(examples / PODS)
    some = load_alibaba(examples / PODS, limit=10)
    assert some.jobs == full.jobs[:10]
    assert some.skipped == 14


def test_skip_reasons_and_shift(write: Callable[[str, str], Path]) -> None:
    path = write("pods.csv", HEADER +
                 "p0,1000,1024,1,500,,BE,Pending,100,200,\n"
                 "p1,1000,1024,1,1000,,BE,Running,150,,160\n"
                 "p2,1000,1024,1,1000,,BE,Failed,200,300,300\n"
                 "p3,1000,1024,2,1000,A10|T4|T4,Guaranteed,Running,250,400,260\n"
                 "p4,1000,1024,1,1000,T4|T4,,Succeeded,300,400,350\n"
                 "p5,1000,0,0,0,nan,Burstable,Succeeded,400,401,400\n")
    trace = load_alibaba(path)
    assert trace.skip_reasons == {NEVER_SCHEDULED: 1, NEVER_DELETED: 1, NOT_POSITIVE: 1}
    assert trace.skipped == 3
    assert [(j.name, j.submit_time, j.duration) for j in trace.jobs] == [
        ("p3", 0.0, 140.0), ("p4", 50.0, 50.0), ("p5", 150.0, 1.0)]
    p3, p4, p5 = trace.jobs
    assert (p3.priority_class, dict(p3.node_selector)) == ("production", {})
    assert (p4.priority_class, dict(p4.node_selector)) == (None, {GPU_TYPE_LABEL: "T4"})
    assert (p5.priority_class, dict(p5.node_selector)) == ("normal", {})


def test_optional_columns_may_be_absent(write: Callable[[str, str], Path]) -> None:
    path = write("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,"
                 "deletion_time,scheduled_time\np0,1000,1024,1,300,5,20,10\n")
    (job,) = load_alibaba(path).jobs
    assert (job.priority_class, dict(job.node_selector), job.duration) == (None, {}, 10.0)


@pytest.mark.parametrize(("row", "column", "message"), [
    ("p,1000,1024,1,abc,,BE,Running,0,10,0", "gpu_milli", "must be a whole number, got 'abc'"),
    ("p,1000,1024,1,1200,,BE,Running,0,10,0", "gpu_milli", "must be between 0 and 1000"),
    ("p,1000,1024,1,0,,BE,Running,0,10,0", "gpu_milli", "must be 0 exactly when num_gpu is 0"),
    ("p,-1,1024,1,1000,,BE,Running,0,10,0", "cpu_milli", "must be at least 0, got -1"),
    ("p,1000,1.5,1,1000,,BE,Running,0,10,0", "memory_mib", "must be a whole number"),
    ("p,1000,1024,1,1000,,XX,Running,0,10,0", "qos",
     "must be one of LS, Guaranteed, Burstable, BE or empty, got 'XX'"),
    ("p,1000,1024,1,1000,,BE,Running,-3,10,0", "creation_time", "must be a non-negative number"),
    ("p,1000,1024,1,1000,,BE,Running,0,soon,0", "deletion_time",
     "must be a non-negative number, got 'soon'"),
    ("p,1000,1024,1,1000,,BE,Running,0,10,x", "scheduled_time", "must be a non-negative"),
    ("q,1000,1024,1,1000,,BE,Running,0,10,0", "name", "pod 'q' is already given on line 2"),
])
def test_malformed_pod_names_file_line_and_column(
        write: Callable[[str, str], Path], row: str, column: str, message: str) -> None:
    path = write("openb_pod_list.csv", HEADER + "q,1000,1024,1,1000,,BE,Running,0,10,0\n"
                 + row + "\n")
    with pytest.raises(TraceError) as caught:
        load_alibaba(path)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(path), 3, column)
    assert str(error).startswith(f"{path}:3: column '{column}': ")
    assert message in str(error)


def test_pod_list_without_times_is_refused(write: Callable[[str, str], Path]) -> None:
    # openb_pod_list_multigpu50.csv has only the resource columns: nothing to replay.
    path = write("multigpu.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\n")
    with pytest.raises(TraceError) as caught:
        load_alibaba(path)
    assert (caught.value.line, caught.value.column) == (1, "creation_time")
    assert "missing from the header" in str(caught.value)


def test_nodes_sample(examples: Path) -> None:
    nodes = load_alibaba_nodes(examples / NODES)
    assert len(nodes) == 40
    first = nodes[0]
    assert first.name == "openb-node-0000"
    assert first.capacity == Resources(cpu=64000, memory=262144, gpu=2)
    assert first.gpu_type == "P100"
    assert sum(n.capacity.gpu for n in nodes) == 174
    assert Counter(n.gpu_type for n in nodes) == {
        "P100": 22, "G2": 11, "G3": 2, "V100M32": 2, "T4": 2, "V100M16": 1}
    milli = load_alibaba_nodes(examples / NODES, gpu_sharing="milli")
    assert milli[0].capacity == Resources.of(cpu=64000, memory=262144, gpu=2,
                                             extras={GPU_MILLI: 2000})


def test_nodes_without_gpus_have_no_gpu_type(write: Callable[[str, str], Path]) -> None:
    path = write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\ncpu-0,32000,262144,0,\n"
                 "cpu-1,32000,262144,0,nan\n")
    nodes = load_alibaba_nodes(path, gpu_sharing="milli")
    assert [(n.name, n.gpu_type, n.capacity.get(GPU_MILLI)) for n in nodes] == [
        ("cpu-0", None, 0), ("cpu-1", None, 0)]


@pytest.mark.parametrize(("row", "column", "message"), [
    ("n2,32000,x,8,G2", "memory_mib", "must be a whole number, got 'x'"),
    ("n2,32000,1024,-8,G2", "gpu", "must be at least 0"),
    ("n 2,32000,1024,8,G2", "sn", "must be a name"),
    ("n1,32000,1024,8,G2", "sn", "node 'n1' is already given on line 2"),
])
def test_malformed_node_names_file_line_and_column(
        write: Callable[[str, str], Path], row: str, column: str, message: str) -> None:
    path = write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,1,T4\n" + row + "\n")
    with pytest.raises(TraceError) as caught:
        load_alibaba_nodes(path)
    assert (caught.value.line, caught.value.column) == (3, column)
    assert message in str(caught.value)


def test_empty_node_list_and_bad_sharing(write: Callable[[str, str], Path]) -> None:
    with pytest.raises(TraceError, match="lists no nodes"):
        load_alibaba_nodes(write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\n"))
    with pytest.raises(ValueError, match="gpu_sharing"):
        load_alibaba("x.csv", gpu_sharing="half")  # type: ignore[arg-type]
