"""Checks across documents: references, duplicate names, the quota tree and status tasks.
Each message names the document, the field path and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_helpers import JOB, JOB_1, NODE, SOURCE, docs, expect, issues, one_issue, vc, yaml

from shoal.spec import SpecError, load_files, load_text

# ---- references ---------------------------------------------------------------------------

def test_unknown_queue() -> None:
    text = docs(vc("team-a"), JOB.replace("spec:\n", "spec:\n  queue: team-b\n"))
    assert one_issue(text) == (
        f"{SOURCE}: document 2 (Job 'train-a'): spec.queue: unknown queue 'team-b'; expected "
        "'default' or a declared VirtualCluster (declared: 'team-a')")


def test_root_is_not_a_queue() -> None:
    expect(one_issue(JOB.replace("spec:\n", "spec:\n  queue: root\n")),
           f"{JOB_1}spec.queue: ", "unknown queue 'root'")


def test_unknown_priority_class() -> None:
    text = JOB.replace("spec:\n", "spec:\n  priorityClassName: urgent\n")
    expect(one_issue(text), f"{JOB_1}spec.priorityClassName: ",
           "unknown priority class 'urgent'", "'experiment', 'normal', 'offline', 'production'")


def test_unknown_vc_parent() -> None:
    expect(one_issue(vc("a", "{parent: nowhere}")),
           f"{SOURCE}: document 1 (VirtualCluster 'a'): spec.parent: ",
           "unknown parent 'nowhere'; expected 'root' or a declared VirtualCluster")


def test_a_broken_document_is_not_reported_again_as_an_unknown_reference() -> None:
    text = docs(vc("team-a", "{weight: 0}"), JOB.replace("spec:\n", "spec:\n  queue: team-a\n"))
    expect(one_issue(text), f"{SOURCE}: document 1 (VirtualCluster 'team-a'): spec.weight: ",
           "must be at least 1, got 0")


# ---- duplicates ---------------------------------------------------------------------------

PRIORITY = yaml("""
    apiVersion: shoal/v1
    kind: PriorityClass
    metadata: {name: urgent}
    value: 10
    """)


@pytest.mark.parametrize(("first", "second", "label"), [
    (NODE, NODE, "Node 'n1'"),
    (vc("team-a"), vc("team-a"), "VirtualCluster 'team-a'"),
    (PRIORITY, PRIORITY, "PriorityClass 'urgent'"),
    (JOB, JOB, "Job 'train-a'"),
])
def test_duplicate_names(first: str, second: str, label: str) -> None:
    assert one_issue(docs(first, second)) == (
        f"{SOURCE}: document 2 ({label}): metadata.name: {label} is already declared in "
        f"{SOURCE} document 1")


def test_duplicate_node_names_after_count_expansion() -> None:
    racks = NODE.replace("n1", "rack").replace("gpu: 8}", "gpu: 8}\n  count: 3")
    line = one_issue(docs(racks, NODE.replace("n1", "rack-2")))
    expect(line, f"{SOURCE}: document 2 (Node 'rack-2'): metadata.name: ",
           "Node 'rack-2' is already declared in spec.yaml document 1")


def test_duplicate_job_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(JOB)
    (tmp_path / "b.yaml").write_text(JOB)
    with pytest.raises(SpecError) as info:
        load_files([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    (issue,) = info.value.issues
    assert (issue.source, issue.document, issue.path) == (str(tmp_path / "b.yaml"), 1,
                                                          "metadata.name")
    assert f"already declared in {tmp_path / 'a.yaml'} document 1" in issue.message


def test_duplicate_task_group_in_a_job() -> None:
    text = JOB + "    - {name: worker, replicas: 1, resources: {cpu: 1}}\n"
    expect(one_issue(text), f"{JOB_1}spec.taskGroups[1].name: ",
           "task group 'worker' is declared twice")


def test_two_global_defaults_and_two_profiles() -> None:
    default = PRIORITY + "globalDefault: true\n"
    profile = "apiVersion: shoal/v1\nkind: SchedulerProfile\nspec: {}\n"
    lines = [str(i) for i in issues(docs(default, default.replace("urgent", "rush"),
                                         profile, profile))]
    assert lines == [
        f"{SOURCE}: document 2 (PriorityClass 'rush'): globalDefault: only one PriorityClass "
        f"may be the global default; 'urgent' in {SOURCE} document 1 already is",
        f"{SOURCE}: document 4 (SchedulerProfile): only one SchedulerProfile is allowed per "
        f"load; {SOURCE} document 3 already declares one",
    ]


# ---- the quota tree -----------------------------------------------------------------------

def test_vc_parent_cycle() -> None:
    text = docs(vc("a", "{parent: c}"), vc("b", "{parent: a}"), vc("c", "{parent: b}"),
                vc("d", "{parent: a}"))
    assert one_issue(text) == (f"{SOURCE}: document 1 (VirtualCluster 'a'): spec.parent: "
                               "virtual clusters form a parent cycle: a → c → b → a")


def test_vc_that_is_its_own_parent() -> None:
    expect(one_issue(vc("a", "{parent: a}")), f"{SOURCE}: document 1 (VirtualCluster 'a'): "
           "spec.parent: ", "parent cycle: a → a")


def test_children_mins_exceed_parent_min() -> None:
    text = docs(vc("org", "{min: {gpu: 8}}"), vc("a", "{parent: org, min: {gpu: 6}}"),
                vc("b", "{parent: org, min: {gpu: 4, cpu: 1}}"))
    expect(one_issue(text), f"{SOURCE}: document 1 (VirtualCluster 'org'): spec.min: ",
           "children ('a', 'b') add up to {cpu=1, gpu=10}", "more than this one's {gpu=8}",
           "over in cpu, gpu")


def test_children_of_the_implicit_default_cannot_have_a_min() -> None:
    text = vc("a", "{parent: default, min: {gpu: 1}}")
    expect(one_issue(text), f"{SOURCE}: document 1 (VirtualCluster 'a'): spec.min: ",
           "implicit 'default' virtual cluster", "declare 'default' with a min")


def test_root_children_mins_exceed_the_nodes_only_when_nodes_are_given() -> None:
    big = vc("a", "{min: {gpu: 9}}")
    assert load_text(big).virtual_clusters[0].min.gpu == 9
    expect(one_issue(docs(NODE, big)), f"{SOURCE}: document 2 (VirtualCluster 'a'): spec.min: ",
           "under root ('a') add up to {gpu=9}", "nodes' allocatable", "over in gpu")


def test_vc_min_above_max() -> None:
    assert one_issue(vc("a", "{min: {gpu: 8, cpu: 1}, max: {gpu: 4}}")) == (
        f"{SOURCE}: document 1 (VirtualCluster 'a'): spec.min: must fit in this virtual "
        "cluster's max; over in gpu 8 > 4")


def test_root_is_a_reserved_vc_name() -> None:
    expect(one_issue(vc("root")), f"{SOURCE}: document 1 (VirtualCluster 'root'): "
           "metadata.name: ", "'root' is reserved")


# ---- status tasks -------------------------------------------------------------------------

def status(*tasks: str) -> str:
    return docs(NODE, JOB + "status:\n  tasks:\n" + "".join(f"    - {t}\n" for t in tasks))


JOB_2 = f"{SOURCE}: document 2 (Job 'train-a'): "


@pytest.mark.parametrize(("task", "path", "expected"), [
    ("{group: ps, index: 0, node: n1}", "status.tasks[0].group",
     "task group 'ps' is not declared in spec.taskGroups (declared: worker)"),
    ("{group: worker, index: 4, node: n1}", "status.tasks[0].index",
     "must be below the replicas of group 'worker' (4), got 4"),
    ("{group: worker, index: 0, node: n9}", "status.tasks[0].node",
     "unknown node 'n9'; expected a declared Node"),
    ("{group: worker, index: 0}", "status.tasks[0].node", "a Running task must name its node"),
    ("{group: worker, index: 0, node: n1, gpus: [0]}", "status.tasks[0].gpus",
     "as many GPUs as the group requests (2), got 1"),
    ("{group: worker, index: 0, node: n1, gpus: [7, 8]}", "status.tasks[0].gpus",
     "GPU index 8 does not exist on node 'n1', which has 8 GPUs"),
    ("{group: worker, index: 0, node: n1, gpus: [1, 1]}", "status.tasks[0].gpus",
     "must not repeat a GPU index"),
    ("{group: worker, index: 0, node: n1, state: Lost}", "status.tasks[0].state",
     "input should be 'Pending', 'Bound', 'Running'"),
])
def test_bad_status_task(task: str, path: str, expected: str) -> None:
    expect(one_issue(status(task)), f"{JOB_2}{path}: ", expected)


def test_duplicate_status_task_and_shared_gpu() -> None:
    lines = [str(i) for i in issues(status("{group: worker, index: 0, node: n1, gpus: [0, 1]}",
                                           "{group: worker, index: 0, node: n1}",
                                           "{group: worker, index: 1, node: n1, gpus: [1, 2]}"))]
    assert lines == [
        f"{JOB_2}status.tasks[1]: task worker/0 is already given as status.tasks[0]",
        f"{JOB_2}status.tasks[2].gpus: GPU 1 of node 'n1' is already held by task "
        "train-a/worker/0",
    ]


def test_known_nodes_are_checked_when_the_load_declares_none() -> None:
    text = JOB + "status:\n  tasks: [{group: worker, index: 0, node: n2}]\n"
    expect(one_issue(text, known_nodes={"n1"}), f"{JOB_1}status.tasks[0].node: ",
           "unknown node 'n2'")
