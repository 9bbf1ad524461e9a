"""How much one load may ask for: `Limits`, and the checks of a validated document against
them (string lengths, entry counts, replicas, tasks per job, node counts).

Shoal is shared by tenants who do not trust each other's inputs, so everything a user or an
admin controls is bounded before it costs the server more than a small, fixed amount. The
bounds on the text itself (nesting depth, items per collection, aliases) are enforced while
reading it (`shoal.spec.reading`); those on the meaning of a field are enforced here, after
the document has its form and before it is converted, each reported under its field path.
Integers outside the 64-bit range are refused by the document models themselves
(`shoal.spec.documents.INT64_MAX`), whatever the limits say.

Nothing here walks a job's tasks: replicas are summed per group, so checking a job of a
million replicas costs what checking a job of one does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields

from shoal.api.defaults import MAX_BODY_BYTES, MAX_NODES, MAX_TASKS_PER_JOB
from shoal.spec.cluster_documents import (
    FixedSizeNodesSpec,
    NodeDocument,
    PriorityClassDocument,
    VirtualClusterDocument,
)
from shoal.spec.documents import Document, JobDocument, TaskGroupSpec
from shoal.spec.errors import join_path

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one load. The defaults protect a small server; `shoal up` exposes the
    important ones as flags."""

    max_body_bytes: int = MAX_BODY_BYTES
    """A request body (the API only)."""
    max_depth: int = 32
    """Nesting of mappings and lists in one document; a job needs 6."""
    max_items: int = 10_000
    """Entries of any one mapping or list, as read."""
    max_values: int = 200_000
    """Values (scalars, mappings, lists) of one text, its documents together; each document
    counts as one more."""
    max_string_length: int = 16 * KiB
    """Each command argument, environment value, label or annotation value, working
    directory and description."""
    max_key_length: int = 253
    """Each environment name and label, annotation or node-selector key."""
    max_args: int = 1_024
    """Entries of one task group's `command`."""
    max_env: int = 256
    """Entries of one task group's `env`."""
    max_labels: int = 256
    """Entries of one labels, annotations or nodeSelector mapping."""
    max_task_groups: int = 64
    """Task groups of one job."""
    max_replicas: int = 10_000
    """Replicas of one task group."""
    max_tasks_per_job: int = MAX_TASKS_PER_JOB
    """Replicas of all the task groups of one job together."""
    max_nodes: int = MAX_NODES
    """Nodes one load declares (a Node's `count` included), whole load together."""
    max_issues: int = 16
    """Issues an API answer lists (a load gathers them all; the answer shows the first)."""
    max_jobs_per_submission: int = 1_000
    """Jobs one submitted document may become (a Volcano job is one; Sedna's phases, an
    array, several): checked before any of them is checked against the cluster or stored."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limit {f.name} must be a positive integer, got {value!r}")


DEFAULT_LIMITS = Limits()
#: For the files of the offline tools (`shoal sim` traces and cluster files): read as safely
#: (depth, aliases, literals and string lengths as by default), but sized for whole traces
#: of many thousands of jobs and for simulated clusters of up to a million nodes.
FILE_LIMITS = Limits(max_items=10_000_000, max_values=1_000_000_000, max_nodes=1_000_000,
                     max_replicas=1_000_000, max_tasks_per_job=1_000_000)

Problem = tuple[str, str]
"""A field path and what is wrong there."""


def document_problems(model: Document, limits: Limits) -> list[Problem]:
    """What in `model` goes beyond `limits` (node counts excepted: they add up across a
    load, see `node_count_problem`)."""
    if isinstance(model, JobDocument):
        return list(_job(model, limits))
    if isinstance(model, NodeDocument):
        return list(_string_map(limits, "metadata.labels", model.metadata.labels))
    if isinstance(model, VirtualClusterDocument):
        return [*_string(limits, "spec.parent", model.spec.parent, limits.max_key_length),
                *_virtual_node_labels(limits, "spec", model.spec.fixed_size_nodes)]
    if isinstance(model, PriorityClassDocument):
        return list(_string(limits, "description", model.description))
    return []


def _virtual_node_labels(limits: Limits, path: str, groups: list[FixedSizeNodesSpec]
                         ) -> Iterator[Problem]:
    for g, group in enumerate(groups):
        for n, node in enumerate(group.nodes):
            yield from _string_map(limits, f"{path}.fixedSizeNodes[{g}].nodes[{n}].labels",
                                   node.labels)


def node_count_problem(count: int, declared_before: int, limits: Limits) -> Problem | None:
    """`count` more nodes after `declared_before` in the same load, against `max_nodes`."""
    if count > limits.max_nodes:
        return ("spec.count", f"must be at most {limits.max_nodes} (the server's limit on "
                              f"nodes), got {count}")
    if declared_before + count > limits.max_nodes:
        return ("spec.count", f"brings the nodes of this load to {declared_before + count}, "
                              f"more than the server's limit of {limits.max_nodes}")
    return None


def _job(model: JobDocument, limits: Limits) -> Iterator[Problem]:
    meta, spec = model.metadata, model.spec
    yield from _string_map(limits, "metadata.annotations", meta.annotations)
    if meta.user is not None:
        yield from _string(limits, "metadata.user", meta.user, limits.max_key_length)
    # Not a key's length: a sub-cluster's queue is its job's name and its own, joined.
    yield from _string(limits, "spec.queue", spec.queue)
    if spec.priority_class_name is not None:
        yield from _string(limits, "spec.priorityClassName", spec.priority_class_name,
                           limits.max_key_length)
    if spec.virtual_cluster is not None:
        yield from _virtual_node_labels(limits, "spec.virtualCluster",
                                        spec.virtual_cluster.fixed_size_nodes)
    groups = spec.task_groups
    if len(groups) > limits.max_task_groups:
        yield ("spec.taskGroups", f"must have at most {limits.max_task_groups} task groups, "
                                  f"got {len(groups)}")
        return
    total = 0
    for i, group in enumerate(groups):
        yield from _group(limits, f"spec.taskGroups[{i}]", group)
        total += group.replicas
    if total > limits.max_tasks_per_job and all(g.replicas <= limits.max_replicas
                                                for g in groups):
        yield ("spec.taskGroups", f"the job's replicas add up to {total}, more than the "
                                  f"server's limit of {limits.max_tasks_per_job} tasks per job")
    if model.status is not None and len(model.status.tasks) > limits.max_tasks_per_job:
        yield ("status.tasks", f"must have at most {limits.max_tasks_per_job} entries, got "
                               f"{len(model.status.tasks)}")


def _group(limits: Limits, path: str, group: TaskGroupSpec) -> Iterator[Problem]:
    if group.replicas > limits.max_replicas:
        yield (f"{path}.replicas", f"must be at most {limits.max_replicas} (the server's limit "
                                   f"per task group), got {group.replicas}")
    if len(group.command) > limits.max_args:
        yield (f"{path}.command", f"must have at most {limits.max_args} entries, got "
                                  f"{len(group.command)}")
    else:
        for a, arg in enumerate(group.command):
            yield from _string(limits, f"{path}.command[{a}]", arg)
    if len(group.env) > limits.max_env:
        yield (f"{path}.env", f"must have at most {limits.max_env} entries, got "
                              f"{len(group.env)}")
    else:
        yield from _pairs(limits, f"{path}.env", group.env)
    yield from _string_map(limits, f"{path}.nodeSelector", group.node_selector)
    if group.working_dir is not None:
        yield from _string(limits, f"{path}.workingDir", group.working_dir)


def _string_map(limits: Limits, path: str, mapping: Mapping[str, str]) -> Iterator[Problem]:
    if len(mapping) > limits.max_labels:
        yield (path, f"must have at most {limits.max_labels} entries, got {len(mapping)}")
        return
    yield from _pairs(limits, path, mapping)


def _pairs(limits: Limits, path: str, mapping: Mapping[str, str]) -> Iterator[Problem]:
    for key, value in mapping.items():
        if len(key) > limits.max_key_length:
            yield (path, f"key {key[:40]!r}... is {len(key)} characters long; at most "
                         f"{limits.max_key_length} are allowed")
            continue
        yield from _string(limits, join_path(path, key), value)


def _string(limits: Limits, path: str, value: str, most: int | None = None
            ) -> Iterator[Problem]:
    bound = limits.max_string_length if most is None else most
    if len(value) > bound:
        yield (path, f"must be at most {bound} characters long, got {len(value)} "
                     f"({value[:40]!r}...)")
