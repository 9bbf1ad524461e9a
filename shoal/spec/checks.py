"""Checks across the documents of one load: unique names per kind, references (queues,
parents, priority classes, nodes of status tasks), the shape of the quota tree (reserved
names, parent cycles, children's guarantees inside their parent's, fixed-size virtual nodes
that the declared nodes could hold, each group and all together), one global-default
priority class, one scheduler profile, and GPUs that two status tasks both claim.

Whether a job fits any node is deliberately not checked: that is the scheduler's verdict
(it says why a job waits), not a malformed spec.

A document that failed its own validation still declares its name when the name is readable,
so a reference to it is not reported a second time as unknown. When the load could not be
read completely (a YAML syntax error), references are not checked at all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    Job,
    Node,
    PriorityClass,
    Resources,
    VirtualCluster,
)
from shoal.api.flavors import ResourceFlavor, node_flavor_resources
from shoal.api.objects import JOB_VIRTUAL_CLUSTER_PREFIX
from shoal.api.resources import total
from shoal.core.virtual_nodes import uncarvable, unplaceable
from shoal.spec.convert import Declared
from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.flavors import unknown_flavors


@dataclass
class Declarations:
    """Everything one load declared, in load order, plus what failed to convert."""

    nodes: list[Declared[tuple[Node, ...]]] = field(default_factory=list)
    virtual_clusters: list[Declared[VirtualCluster]] = field(default_factory=list)
    priority_classes: list[Declared[PriorityClass]] = field(default_factory=list)
    resource_flavors: list[Declared[ResourceFlavor]] = field(default_factory=list)
    jobs: list[Declared[Job]] = field(default_factory=list)
    profiles: list[DocRef] = field(default_factory=list)
    profile_spec: dict[str, Any] | None = None
    """The `spec` of the first SchedulerProfile."""
    failed_names: dict[str, set[str]] = field(default_factory=dict)
    """Per kind, the readable names of documents that did not convert."""
    incomplete: set[str] = field(default_factory=set)
    """Kinds for which some declaration could not be read: their references go unchecked."""
    unreadable: bool = False
    """A file could not be read or parsed: no reference is checked."""
    has_nodes: bool = False
    """Some Node document was given, valid or not."""
    node_count: int = 0
    """Nodes the valid Node documents declared so far (their counts added up)."""
    min_paths: dict[str, str] = field(default_factory=dict)
    """Per virtual cluster, where its minimum was written (`spec.flexibleResourceMin`, or
    the older `spec.min`): the path its guarantee issues are reported under."""

    def min_path(self, name: str) -> str:
        return self.min_paths.get(name, "spec.flexibleResourceMin")


@dataclass(frozen=True)
class Known:
    """Names that exist outside this load (a running cluster's queues, nodes, classes)."""

    queues: Collection[str] = ()
    nodes: Collection[str] = ()
    priority_classes: Collection[str] = ()
    resource_flavors: Collection[str] = ()


def check_all(log: IssueLog, d: Declarations, known: Known) -> None:
    _duplicates(log, "Node", ((x.doc, n.name) for x in d.nodes for n in x.value))
    _duplicates(log, "VirtualCluster", ((x.doc, x.value.name) for x in d.virtual_clusters))
    _duplicates(log, "PriorityClass", ((x.doc, x.value.name) for x in d.priority_classes))
    _duplicates(log, "Job", ((x.doc, x.value.name) for x in d.jobs))
    _duplicates(log, "ResourceFlavor", ((x.doc, x.value.name) for x in d.resource_flavors))
    if _resolvable(d, "ResourceFlavor"):
        unknown_flavors(log, ((x.doc, x.value) for x in d.virtual_clusters),
                        {x.value.name for x in d.resource_flavors}
                        | d.failed_names.get("ResourceFlavor", set())
                        | set(known.resource_flavors))
    _singletons(log, d)
    _quota_tree(log, d, known)
    _job_references(log, d, known)
    _gpu_claims(log, d)


def _duplicates(log: IssueLog, kind: str, names: Iterable[tuple[DocRef, str]]) -> None:
    first: dict[str, DocRef] = {}
    for doc, name in names:
        if name in first:
            log.add(doc, "metadata.name",
                    f"{kind} {name!r} is already declared in {first[name].where()}")
        else:
            first[name] = doc


def _singletons(log: IssueLog, d: Declarations) -> None:
    defaults = [x for x in d.priority_classes if x.value.global_default]
    for extra in defaults[1:]:
        log.add(extra.doc, "globalDefault",
                f"only one PriorityClass may be the global default; {defaults[0].value.name!r} "
                f"in {defaults[0].doc.where()} already is")
    for later in d.profiles[1:]:
        log.add(later, "", f"only one SchedulerProfile is allowed per load; "
                f"{d.profiles[0].where()} already declares one")


def _resolvable(d: Declarations, kind: str) -> bool:
    return not d.unreadable and kind not in d.incomplete


def _listing(names: Iterable[str]) -> str:
    shown = sorted(set(names))
    return ", ".join(repr(n) for n in shown) if shown else "none"


# ---- the quota tree -----------------------------------------------------------------------

def _quota_tree(log: IssueLog, d: Declarations, known: Known) -> None:
    vcs: dict[str, Declared[VirtualCluster]] = {}
    for x in d.virtual_clusters:
        if x.value.name == ROOT_QUEUE:
            log.add(x.doc, "metadata.name",
                    f"{ROOT_QUEUE!r} is reserved: it is the physical cluster itself")
        else:
            vcs.setdefault(x.value.name, x)
    parents_ok = _resolvable(d, "VirtualCluster")
    failed = d.failed_names.get("VirtualCluster", set())
    for x in vcs.values():
        parent = x.value.parent
        if parents_ok and parent not in vcs and parent not in failed \
                and parent not in known.queues and parent not in (ROOT_QUEUE, DEFAULT_QUEUE):
            log.add(x.doc, "spec.parent",
                    f"unknown parent {x.value.parent!r}; expected 'root' or a declared "
                    f"VirtualCluster (declared: {_listing(vcs)})")
    in_cycle = _cycles(log, vcs)
    children: dict[str, list[Declared[VirtualCluster]]] = {}
    for x in vcs.values():
        if x.value.name not in in_cycle:
            children.setdefault(x.value.parent, []).append(x)
    for parent, kids in children.items():
        _guarantees_fit(log, parent, kids, vcs, d)
    if d.has_nodes and _resolvable(d, "Node"):
        node_list = [n for x in d.nodes for n in x.value]
        placeable = True
        for x in vcs.values():
            problem = unplaceable(x.value.fixed_size_nodes, node_list)
            if problem is not None:
                log.add(x.doc, f"spec.{problem[0]}", problem[1])
                placeable = False
        together = placeable and uncarvable([x.value for x in vcs.values()], node_list)
        if together:
            log.add(vcs[together[0]].doc, "spec.fixedSizeNodes", together[1])


def _cycles(log: IssueLog, vcs: Mapping[str, Declared[VirtualCluster]]) -> set[str]:
    """Report each parent cycle once, at its member declared first; return every member."""
    members: set[str] = set()
    for start in vcs:
        path: list[str] = []
        current = start
        while current in vcs and current not in path and current not in members:
            path.append(current)
            current = vcs[current].value.parent
        if current in path:
            cycle = path[path.index(current):]
            members.update(cycle)
            order = sorted(cycle, key=list(vcs).index)
            head = order[0]
            ring = cycle[cycle.index(head):] + cycle[:cycle.index(head)] + [head]
            log.add(vcs[head].doc, "spec.parent",
                    f"virtual clusters form a parent cycle: {' → '.join(ring)}")
    return members


def _guarantees_fit(log: IssueLog, parent: str, kids: list[Declared[VirtualCluster]],
                    vcs: Mapping[str, Declared[VirtualCluster]], d: Declarations) -> None:
    """The guaranteed minimums (flexible minimum plus fixed-size nodes) of a parent's
    children must fit in the parent's own guarantee."""
    wanted = total(k.value.guaranteed for k in kids)
    if wanted.is_zero():
        return
    names = ", ".join(repr(k.value.name) for k in kids)
    first = kids[0]
    first_path = d.min_path(first.value.name)
    if parent in vcs:
        owner = vcs[parent]
        have = owner.value.guaranteed
        if not wanted.fits(have):
            log.add(owner.doc, d.min_path(parent),
                    f"the guaranteed minimums of its children ({names}) add up to {wanted}, "
                    f"more than this one's {have}; over in {_over(wanted, have)}")
    elif parent == DEFAULT_QUEUE:
        log.add(first.doc, first_path,
                f"the guaranteed minimums of the children of the implicit 'default' virtual "
                f"cluster ({names}) add up to {wanted}, but its minimum is zero; declare "
                f"'default' with a minimum")
    elif parent == ROOT_QUEUE and d.has_nodes and _resolvable(d, "Node"):
        flavors = [x.value for x in d.resource_flavors]
        # Flavor quotas are guaranteed out of the flavors' nodes (`shoal.api.flavors`).
        capacity = total(n.allocatable_resources
                         + node_flavor_resources(n.allocatable_resources, n.labels, flavors)
                         for x in d.nodes for n in x.value)
        if not wanted.fits(capacity):
            log.add(first.doc, first_path,
                    f"the guaranteed minimums of the virtual clusters under root ({names}) add "
                    f"up to {wanted}, more than the nodes' allocatable {capacity}; over in "
                    f"{_over(wanted, capacity)}")


def _over(wanted: Resources, available: Resources) -> str:
    return ", ".join(wanted.shortfall(available))


# ---- jobs ---------------------------------------------------------------------------------

def _job_references(log: IssueLog, d: Declarations, known: Known) -> None:
    # The known names (a running cluster's: every node, virtual cluster and class) are
    # looked up where they are, not copied: a submission's checks do not grow with the
    # cluster. The union is built only for an error's listing.
    queues = ({DEFAULT_QUEUE} | {x.value.name for x in d.virtual_clusters}
              | d.failed_names.get("VirtualCluster", set())) - {ROOT_QUEUE}
    classes = ({p.name for p in BUILTIN_PRIORITY_CLASSES}
               | {x.value.name for x in d.priority_classes}
               | d.failed_names.get("PriorityClass", set()))
    nodes = {n.name for x in d.nodes for n in x.value}
    check_nodes = _resolvable(d, "Node") and (d.has_nodes or bool(known.nodes))
    for x in d.jobs:
        job = x.value
        # A job-scoped virtual cluster exists only while its job runs: the scheduler, not
        # the spec, says whether it does (at submission).
        if _resolvable(d, "VirtualCluster") and job.queue not in queues \
                and (job.queue == ROOT_QUEUE or job.queue not in known.queues) \
                and not job.queue.startswith(JOB_VIRTUAL_CLUSTER_PREFIX):
            declared = (queues | set(known.queues)) - {ROOT_QUEUE, DEFAULT_QUEUE}
            log.add(x.doc, "spec.queue",
                    f"unknown queue {job.queue!r}; expected 'default' or a declared "
                    f"VirtualCluster (declared: {_listing(declared)})")
        if (_resolvable(d, "PriorityClass") and job.priority_class is not None
                and job.priority_class not in classes
                and job.priority_class not in known.priority_classes):
            log.add(x.doc, "spec.priorityClassName",
                    f"unknown priority class {job.priority_class!r}; expected one of "
                    f"{_listing(classes | set(known.priority_classes))}")
        if not check_nodes:
            continue
        for i, task in enumerate(job.tasks):
            if task.node is not None and task.node not in nodes \
                    and task.node not in known.nodes:
                log.add(x.doc, f"status.tasks[{i}].node",
                        f"unknown node {task.node!r}; expected a declared Node")


def _gpu_claims(log: IssueLog, d: Declarations) -> None:
    """GPU indices must exist on their node, and two live tasks may not hold the same one."""
    gpus = {n.name: n.capacity.gpu for x in d.nodes for n in x.value}
    holder: dict[tuple[str, int], str] = {}
    for x in d.jobs:
        for i, task in enumerate(x.value.tasks):
            node = task.node
            if node is None or node not in gpus:
                continue
            path = f"status.tasks[{i}].gpus"
            for gpu in sorted(set(task.gpus)):
                if gpu >= gpus[node]:
                    log.add(x.doc, path, f"GPU index {gpu} does not exist on node "
                            f"{node!r}, which has {gpus[node]} GPUs")
                elif task.state.holds_resources:
                    claim = (node, gpu)
                    if claim in holder:
                        log.add(x.doc, path, f"GPU {gpu} of node {node!r} is already "
                                f"held by task {holder[claim]}")
                    else:
                        holder[claim] = str(task.ref)
