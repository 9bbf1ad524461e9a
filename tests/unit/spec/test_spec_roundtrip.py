"""Valid native specs become the expected `shoal.api` objects: canonical units, defaults,
count expansion, the volcano alias, status tasks, and loads spread over several files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    JobState,
    Node,
    PriorityClass,
    QueueingPolicy,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    VirtualCluster,
)
from shoal.api.lifecycle import TaskState
from shoal.spec import SpecBundle, load_file, load_files, load_text

DATA = Path(__file__).parent / "data"
GIB = 1024  # MiB


def yaml(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def job_doc(name: str, extra_spec: str = "", group: str = "worker") -> str:
    return yaml(f"""
        apiVersion: shoal/v1
        kind: Job
        metadata: {{name: {name}}}
        spec:
          taskGroups:
            - name: {group}
              replicas: 2
              resources: {{cpu: 1, gpu: 1}}
        """) + extra_spec


@pytest.fixture(scope="module")
def cluster() -> SpecBundle:
    return load_files([DATA / "cluster.yaml", DATA / "jobs.yaml"])


def test_nodes_are_expanded_in_canonical_units(cluster: SpecBundle) -> None:
    a100 = Resources.of(cpu=64_000, memory=512 * GIB, gpu=8, extras={"rdma/hca": 4})
    a100_alloc = Resources.of(cpu=62_000, memory=500 * GIB, gpu=8, extras={"rdma/hca": 4})
    labels = {"gpu-type": "A100", "zone": "east"}
    assert cluster.nodes == (
        Node("a100-0", a100, labels, a100_alloc, schedulable=True),
        Node("a100-1", a100, labels, a100_alloc, schedulable=True),
        Node("v100", Resources.of(cpu=32_000, memory=256 * GIB, gpu=4), {"gpu-type": "V100"},
             None, schedulable=False),
    )
    assert cluster.nodes[2].allocatable_resources == cluster.nodes[2].capacity
    assert cluster.nodes[0].gpu_type == "A100"


def test_count_one_keeps_the_name_and_memory_bare_numbers_are_bytes() -> None:
    bundle = load_text(yaml("""
        apiVersion: shoal/v1
        kind: Node
        metadata: {name: solo}
        spec:
          capacity: {cpu: 1.5, memory: 1048577, gpu: "2"}
          count: 1
        """))
    # One byte over a MiB rounds up: a capacity is never over-counted in the caller's favour.
    assert bundle.nodes == (Node("solo", Resources.of(cpu=1500, memory=2, gpu=2)),)


def test_virtual_clusters_with_and_without_defaults(cluster: SpecBundle) -> None:
    research, team_a = cluster.virtual_clusters
    assert research == VirtualCluster("research", ROOT_QUEUE, Resources.of(cpu=32_000, gpu=12),
                                      ResourceLimit.unlimited(), 2, QueueingPolicy.PRIORITY)
    assert team_a == VirtualCluster(
        "team-a", "research", Resources.of(cpu=16_000, gpu=8),
        ResourceLimit.of({"gpu": 16, "nvidia.com/gpu-mig": 0}), 3, QueueingPolicy.FIFO)


def test_virtual_cluster_without_spec_takes_every_default() -> None:
    bundle = load_text(yaml("""
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {name: scratch}
        """))
    assert bundle.virtual_clusters == (VirtualCluster("scratch"),)
    assert bundle.virtual_clusters[0].max.is_unlimited()


def test_explicit_default_virtual_cluster_replaces_the_implicit_one() -> None:
    text = yaml("""
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {name: default}
        spec: {min: {gpu: 2}}
        ---
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {name: child}
        spec: {parent: default, min: {gpu: 2}}
        """)
    bundle = load_text(text)
    assert [vc.name for vc in bundle.all_virtual_clusters()] == [DEFAULT_QUEUE, "child"]
    assert bundle.all_virtual_clusters()[0].min == Resources.of(gpu=2)


def test_implicit_default_virtual_cluster_is_added_on_request() -> None:
    bundle = load_text(job_doc("j"))
    assert bundle.virtual_clusters == ()
    assert bundle.all_virtual_clusters() == (VirtualCluster(DEFAULT_QUEUE),)


def test_priority_classes(cluster: SpecBundle) -> None:
    assert cluster.priority_classes == (
        PriorityClass("urgent", 5000, "deadline work", global_default=True),)
    effective = cluster.all_priority_classes()
    assert [pc.name for pc in effective] == [
        *(pc.name for pc in BUILTIN_PRIORITY_CLASSES), "urgent"]
    assert [pc.name for pc in effective if pc.global_default] == ["urgent"]


def test_declared_priority_class_redefines_a_builtin() -> None:
    bundle = load_text(yaml("""
        apiVersion: shoal/v1
        kind: PriorityClass
        metadata: {name: offline}
        value: 50
        """))
    by_name = {pc.name: pc for pc in bundle.all_priority_classes()}
    assert by_name["offline"].value == 50
    assert by_name["normal"].global_default


def test_profile_is_kept_as_written(cluster: SpecBundle) -> None:
    assert cluster.profile == {
        "actions": ["enqueue", "allocate", "backfill"],
        "plugins": [[{"name": "gang"}, {"name": "priority"}]],
    }
    assert load_text(job_doc("x")).profile is None


def test_job_with_every_field(cluster: SpecBundle) -> None:
    train = cluster.jobs[0]
    assert train.name == "train-a"
    assert train.user == "alice"
    assert train.scheduler_name is SchedulerName.SHOAL  # written as volcano
    assert train.gang and train.gang_minimum == 3
    assert train.min_available == 3
    assert train.queue == "team-a"
    assert train.min_resources == Resources.of(gpu=4)
    assert train.priority_class == "urgent"
    assert train.groups == (
        TaskGroup("master", 1, Resources.of(cpu=500, memory=1024),
                  command=("python", "master.py"), env={"ROLE": "master"}, working_dir="/tmp"),
        TaskGroup("worker", 4, Resources.of(cpu=8000, memory=32 * GIB, gpu=2),
                  node_selector={"gpu-type": "A100"}),
    )
    assert train.tasks == (
        Task("train-a", "worker", 0, TaskState.RUNNING, "a100-0", (0, 1), 3.5),
        Task("train-a", "worker", 1, TaskState.BOUND, "a100-0", (2, 3), None),
        Task("train-a", "master", 0, TaskState.PENDING, None, (), None),
    )
    # Two of minAvailable 3 are bound or running: below its gang minimum, still pending.
    assert train.state is JobState.PENDING


def test_job_defaults(cluster: SpecBundle) -> None:
    sweep = cluster.jobs[1]
    assert sweep.name == "sweep_7"
    assert sweep.queue == DEFAULT_QUEUE
    assert sweep.scheduler_name is SchedulerName.DEFAULT
    assert not sweep.gang and sweep.gang_minimum == 1
    assert sweep.min_available is None
    assert sweep.min_resources is None
    assert sweep.priority_class is None
    assert sweep.user is None
    assert sweep.tasks == ()
    assert sweep.state is JobState.PENDING


def test_submit_time_defaults_to_file_order_across_files(cluster: SpecBundle) -> None:
    assert [job.submitted for job in cluster.jobs] == [0.0, 1.0]
    text = job_doc("a") + "---\n" + job_doc("b").replace(
        "metadata: {name: b}", "metadata: {name: b, creationTimestamp: 12.5}") + "---\n" \
        + job_doc("c")
    assert [job.submitted for job in load_text(text).jobs] == [0.0, 12.5, 2.0]


@pytest.mark.parametrize("name", ["shoal", "volcano"])
def test_gang_scheduler_names(name: str) -> None:
    text = job_doc("g").replace("spec:\n", f"spec:\n  schedulerName: {name}\n  minAvailable: 2\n")
    (job,) = load_text(text).jobs
    assert job.scheduler_name is SchedulerName.SHOAL
    assert job.min_available == 2


def test_default_scheduler_written_out() -> None:
    text = job_doc("d").replace("spec:\n", "spec:\n  schedulerName: default\n")
    assert load_text(text).jobs[0].scheduler_name is SchedulerName.DEFAULT


def test_job_is_pending_when_no_status_task_holds_a_node() -> None:
    text = job_doc("p") + yaml("""
        status:
          tasks:
            - {group: worker, index: 0, node: n, state: Succeeded}
            - {group: worker, index: 1, node: n, state: Releasing, gpus: [0]}
        """)
    (job,) = load_text(text, known_nodes=["n"]).jobs
    assert job.state is JobState.PENDING
    assert [t.state for t in job.tasks] == [TaskState.SUCCEEDED, TaskState.RELEASING]


def test_status_nodes_are_not_checked_when_the_load_has_none() -> None:
    text = job_doc("p") + yaml("""
        status:
          tasks: [{group: worker, index: 0, node: elsewhere}]
        """)
    assert load_text(text).jobs[0].tasks[0].node == "elsewhere"


def test_known_queues_and_priority_classes_resolve_references() -> None:
    text = job_doc("q").replace(
        "spec:\n", "spec:\n  queue: live-team\n  priorityClassName: live-class\n")
    (job,) = load_text(text, known_queues={"live-team"},
                       known_priority_classes={"live-class"}).jobs
    assert (job.queue, job.priority_class) == ("live-team", "live-class")


def test_builtin_priority_class_names_need_no_declaration() -> None:
    for pc in BUILTIN_PRIORITY_CLASSES:
        text = job_doc("j").replace("spec:\n", f"spec:\n  priorityClassName: {pc.name}\n")
        assert load_text(text).jobs[0].priority_class == pc.name


def test_a_group_larger_than_every_node_is_not_a_spec_error() -> None:
    text = yaml("""
        apiVersion: shoal/v1
        kind: Node
        metadata: {name: small}
        spec: {capacity: {cpu: 1, gpu: 1}}
        ---
        """) + job_doc("huge").replace("{cpu: 1, gpu: 1}", "{cpu: 100, gpu: 64}")
    assert load_text(text).jobs[0].groups[0].resources.gpu == 64


def test_load_file_and_trailing_separators(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text("---\n" + job_doc("only") + "---\n---\n")
    bundle = load_file(path)
    assert [job.name for job in bundle.jobs] == ["only"]
    assert load_file(str(path)) == bundle


def test_job_is_running_once_its_gang_minimum_is_bound_or_running() -> None:
    text = job_doc("g").replace("spec:\n", "spec:\n  schedulerName: shoal\n  minAvailable: 2\n")
    for states, expected in ((["Running"], JobState.PENDING),
                             (["Running", "Bound"], JobState.RUNNING),
                             (["Running", "Releasing"], JobState.PENDING)):
        status = "".join(f"\n    - {{group: worker, index: {i}, node: n, state: {s}}}"
                         for i, s in enumerate(states))
        (job,) = load_text(text + f"status:\n  tasks:{status}\n", known_nodes=["n"]).jobs
        assert job.state is expected, states
