"""Each class of bad input is refused with a message that names the document, the field path
and what was expected; every issue of a load is reported together."""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_helpers import JOB, JOB_1, NODE, SOURCE, docs, expect, issues, one_issue, vc, yaml  # noqa: F401

from shoal.spec import SpecError, load_file, load_files

# ---- quantities ---------------------------------------------------------------------------

def test_negative_resource() -> None:
    line = one_issue(JOB.replace("cpu: 8", "cpu: -1"))
    assert line == f"{JOB_1}spec.taskGroups[0].resources.cpu: must not be negative, got -1"


@pytest.mark.parametrize(("resources", "path", "expected"), [
    ("{memory: 32GB}", "resources.memory", "unit 'GB' is unknown; use Ki, Mi, Gi"),
    ("{cpu: two}", "resources.cpu", "must be a quantity like '2', '500m' or '4Gi', got 'two'"),
    ("{cpu: 2x}", "resources.cpu", "plain cores or millicores ('500m'), got '2x'"),
    ("{cpu: 0.0005}", "resources.cpu", "must be a whole number of millicores"),
    ("{gpu: 1.5}", "resources.gpu", "must be a whole number, got 1.5"),
    ("{gpu: true}", "resources.gpu", "must be a number or a quantity string"),
    ("{gpu: [1]}", "resources.gpu", "must be a number or a quantity string"),
    ("{'bad name!': 1}", "resources['bad name!']", "resource name 'bad name!' is not valid"),
])
def test_bad_quantity(resources: str, path: str, expected: str) -> None:
    text = JOB.replace("{cpu: 8, memory: 32Gi, gpu: 2}", resources)
    expect(one_issue(text), f"{JOB_1}spec.taskGroups[0].{path}: ", expected)


def test_resource_given_under_both_gpu_names() -> None:
    line = one_issue(NODE.replace("gpu: 8}", "gpu: 8, nvidia.com/gpu: 8}"))
    expect(line, f"{SOURCE}: document 1 (Node 'n1'): spec.capacity['nvidia.com/gpu']: ",
           "resource 'gpu' is already given as 'gpu'")


def test_node_quantities_and_allocatable_above_capacity() -> None:
    text = NODE.replace("capacity: {cpu: 64, memory: 512Gi, gpu: 8}",
                        "capacity: {cpu: 64, memory: 512Gi, gpu: 8}\n"
                        "  allocatable: {cpu: 64, memory: 600Gi, gpu: 9}")
    expect(one_issue(text), f"{SOURCE}: document 1 (Node 'n1'): spec.allocatable: ",
           "must fit in capacity", "memory 614400 > 524288", "gpu 9 > 8")


# ---- gang fields --------------------------------------------------------------------------

def test_min_available_above_total_replicas() -> None:
    text = JOB.replace("spec:\n", "spec:\n  schedulerName: shoal\n  minAvailable: 5\n")
    assert one_issue(text) == (f"{JOB_1}spec.minAvailable: must be at most the job's total "
                               "replicas (4), got 5")


@pytest.mark.parametrize("scheduler", ["", "  schedulerName: default\n"])
def test_min_available_with_default_scheduler(scheduler: str) -> None:
    text = JOB.replace("spec:\n", f"spec:\n{scheduler}  minAvailable: 2\n")
    expect(one_issue(text), f"{JOB_1}spec.minAvailable: ",
           "only allowed with schedulerName shoal or volcano")


def test_min_available_below_one_and_unknown_scheduler() -> None:
    text = JOB.replace("spec:\n", "spec:\n  schedulerName: kube\n  minAvailable: 0\n")
    lines = [str(i) for i in issues(text)]
    assert lines == [
        f"{JOB_1}spec.schedulerName: input should be 'default', 'shoal' or 'volcano', "
        "got 'kube'",
        f"{JOB_1}spec.minAvailable: must be at least 1, got 0",
    ]


# ---- unknown fields -----------------------------------------------------------------------

@pytest.mark.parametrize(("before", "after", "path", "allowed"), [
    ("kind: Job\n", "kind: Job\nstatuss: {}\n", "statuss",
     "apiVersion, kind, metadata, spec, status"),
    ("{name: train-a}", "{name: train-a, namespace: x}", "metadata.namespace",
     "annotations, creationTimestamp, generateName, labels, name, user"),
    ("spec:\n", "spec:\n  replicas: 3\n", "spec.replicas",
     "array, checkpointInterval, completion, dependsOn, elastic, freezingWindow, hold, "
     "jobRetryCount, minAvailable, minResources, preemptable, priorityClassName, queue, "
     "schedulerName, schedulingPolicy, service, taskGroups, timeLimit, virtualCluster"),
    ("replicas: 4\n", "replicas: 4\n      images: pytorch\n", "spec.taskGroups[0].images",
     "command, completion, env, image, minAvailable, minCount, name, nodeSelector, policies, "
     "replicas, resources, taskRetryCount, workingDir"),
])
def test_unknown_field(before: str, after: str, path: str, allowed: str) -> None:
    field = path.rsplit(".", 1)[-1]
    expect(one_issue(JOB.replace(before, after)), f"{JOB_1}{path}: ",
           f"unknown field {field!r}; allowed here: {allowed}")


def test_snake_case_spelling_is_an_unknown_field() -> None:
    text = vc("a", "{queueing_policy: fifo}")
    expect(one_issue(text), f"{SOURCE}: document 1 (VirtualCluster 'a'): spec.queueing_policy: ",
           "unknown field", "queueingPolicy")


def test_unknown_field_in_status_task() -> None:
    text = JOB + "status:\n  tasks: [{group: worker, index: 0, pod: p}]\n"
    expect(one_issue(text), f"{JOB_1}status.tasks[0].pod: ", "unknown field 'pod'",
           "gpus, group, index, node, startTime, state")


# ---- names --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["train/a", "train.a", "'train a'", "''"])
def test_bad_job_name(name: str) -> None:
    line = one_issue(JOB.replace("{name: train-a}", f"{{name: {name}}}"))
    assert ": metadata.name: must match ^[a-zA-Z0-9_-]+$ (letters, digits, '_' and '-' only)" \
        in line
    assert line.startswith(f"{SOURCE}: document 1 (Job")


def test_bad_group_name() -> None:
    expect(one_issue(JOB.replace("name: worker", "name: Worker_1")),
           f"{JOB_1}spec.taskGroups[0].name: ", "lower-case letters, digits and '-'")


# ---- the file as a whole ------------------------------------------------------------------

def test_yaml_syntax_error_names_line_and_column() -> None:
    text = JOB + "---\napiVersion: shoal/v1\nkind: Job\nmetadata:\n  name: b\n   bad: [1\n"
    # libyaml says "… in this context", PyYAML's pure-Python parser "… here".
    assert one_issue(text).startswith(f"{SOURCE}: document 2: invalid YAML at line 14, "
                                      "column 7: mapping values are not allowed")


def test_yaml_duplicate_key() -> None:
    text = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: u}\nvalue: 1\n"
    assert one_issue(text + "value: 20\n") == (
        f"{SOURCE}: document 1: value: invalid YAML at line 5, column 1: found duplicate key "
        "'value'")


def test_yaml_duplicate_key_deep_inside_is_named_by_its_path() -> None:
    text = JOB + "      env: {A: '1', B: '2', A: '3'}\n"
    assert one_issue(text).startswith(
        f"{SOURCE}: document 1: spec.taskGroups[0].env.A: invalid YAML at line ")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n---\n"])
def test_empty_document_list(text: str) -> None:
    assert one_issue(text) == (
        f"{SOURCE}: contains no documents; expected at least one shoal/v1 document (kinds: "
        "Job, Node, PriorityClass, ResourceFlavor, SchedulerProfile, Service, VirtualCluster)")


def test_no_files_and_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no files were given"):
        load_files([])
    with pytest.raises(SpecError) as info:
        load_file(tmp_path / "missing.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'missing.yaml'}: cannot read the file: ")


@pytest.mark.parametrize(("header", "expected"), [
    ("apiVersion: kubeflow.org/v1\n",
     "apiVersion: must be 'shoal/v1', got 'kubeflow.org/v1'"),
    ("", "apiVersion: required field is missing; expected 'shoal/v1'"),
])
def test_wrong_api_version(header: str, expected: str) -> None:
    text = JOB.replace("apiVersion: shoal/v1\n", header)
    assert one_issue(text) == f"{JOB_1}{expected}"


@pytest.mark.parametrize(("kind", "label", "expected"), [
    ("kind: PodGroup\n", "(PodGroup 'train-a')", "kind: must be one of Job, Node, "
     "PriorityClass, ResourceFlavor, SchedulerProfile, Service, VirtualCluster, got 'PodGroup'"),
    ("", "", "kind: required field is missing; expected one of Job, Node"),
])
def test_unknown_kind(kind: str, label: str, expected: str) -> None:
    line = one_issue(JOB.replace("kind: Job\n", kind))
    expect(line, f"{SOURCE}: document 1{' ' + label if label else ''}: {expected}")


@pytest.mark.parametrize(("text", "got"), [("- a\n- b\n", "list"), ("just text\n", "str")])
def test_non_mapping_document(text: str, got: str) -> None:
    expect(one_issue(docs(JOB, text)), f"{SOURCE}: document 2: a document must be a mapping "
           f"with apiVersion, kind, metadata; got {got}")


def test_missing_required_fields() -> None:
    lines = [str(i) for i in issues("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\n")]
    assert lines == [f"{SOURCE}: document 1 (Job 'j'): spec: required field is missing"]
    text = JOB.replace("      replicas: 4\n", "").replace("- name: worker", "- name: w")
    assert one_issue(text) == f"{JOB_1}spec.taskGroups[0].replicas: required field is missing"


def test_empty_task_group_list() -> None:
    text = "apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\nspec: {taskGroups: []}\n"
    expect(one_issue(text), f"{SOURCE}: document 1 (Job 'j'): spec.taskGroups: ",
           "must have at least 1 item")


# ---- everything at once -------------------------------------------------------------------

def test_several_errors_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(docs(
        NODE.replace("cpu: 64", "cpu: -64"),
        vc("team-a", "{min: {gpu: 4}, max: {gpu: 2}}"),
        "apiVersion: shoal/v2\nkind: Node\n"))
    (tmp_path / "jobs.yaml").write_text(docs(
        JOB.replace("spec:\n", "spec:\n  queue: team-z\n  minAvailable: 9\n"),
        JOB.replace("train-a", "train-b").replace("replicas: 4", "replicas: 4\n      gpus: 2")))
    with pytest.raises(SpecError) as info:
        load_files([tmp_path / "cluster.yaml", tmp_path / "jobs.yaml"])
    found = [(i.source.rsplit("/", 1)[-1], i.document, i.kind, i.name, i.path)
             for i in info.value.issues]
    assert found == [
        ("cluster.yaml", 1, "Node", "n1", "spec.capacity.cpu"),
        ("cluster.yaml", 2, "VirtualCluster", "team-a", "spec.min"),
        ("cluster.yaml", 3, "Node", None, "apiVersion"),
        ("jobs.yaml", 1, "Job", "train-a", "spec.minAvailable"),
        ("jobs.yaml", 1, "Job", "train-a", "spec.queue"),
        ("jobs.yaml", 2, "Job", "train-b", "spec.taskGroups[0].gpus"),
    ]
    assert len(str(info.value).splitlines()) == 6
