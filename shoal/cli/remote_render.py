"""Tables (rich) for the client verbs' `--output table`: jobs, one job in detail, nodes,
virtual clusters and priority classes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from shoal.api import JobState, NodePhase
from shoal.cli.plain_table import JOB_COLUMNS, job_cells
from shoal.cli.plain_table import when as _when

if TYPE_CHECKING:
    from shoal.client import (
        EventView,
        JobView,
        NodeView,
        PriorityClassView,
        ResourceFlavorView,
        TaskView,
        VirtualClusterView,
    )

STATE_STYLE = {JobState.PENDING: "yellow", JobState.RUNNING: "cyan",
               JobState.SUCCEEDED: "green", JobState.FAILED: "red",
               JobState.CANCELLED: "magenta"}
NODE_STATE_STYLE = {NodePhase.READY: "green", NodePhase.NOT_READY: "red",
                    NodePhase.CORDONED: "yellow"}


def _table(title: str | None, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", box=None, header_style="bold",
                  pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _state(state: JobState) -> Text:
    return Text(state.value, style=STATE_STYLE.get(state, ""))


def _quantities(values: dict[str, str | int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "-"


def jobs_table(jobs: Sequence[JobView]) -> Table:
    """`shoal jobs`' table (as plain text: `plain_table`)."""
    table = _table(None, *JOB_COLUMNS)
    state = JOB_COLUMNS.index("STATE")
    for job in jobs:
        cells: list[RenderableType] = list(job_cells(job))
        cells[state] = _state(job.state)
        table.add_row(*cells)
    return table


def _task_row(task: TaskView) -> tuple[str, ...]:
    exit_code = "-" if task.exit_code is None else str(task.exit_code)
    return (task.name, task.state.value, "elastic" if task.elastic else "guaranteed",
            task.node or "-", ",".join(map(str, task.gpus)) or "-", _when(task.start_time),
            exit_code)


def _clock(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def _what(event: EventView, job: str) -> str:
    """`worker/1 Running → Failed` for a task, `job Pending → Running` for the job; the
    kind when the event records no change of state."""
    subject = "job"
    if event.task:
        subject = event.task.removeprefix(f"{job}/")
    if not event.target:
        return f"{subject} {event.kind}"
    return f"{subject} {event.source or event.kind} → {event.target}"


def _events_table(events: Sequence[EventView], job: str) -> Table:
    table = _table("Events", "TIME", "WHAT", "CAUSE")
    table.columns[0].no_wrap = True
    for event in events:
        table.add_row(_clock(event.time), _what(event, job), event.cause)
    return table


def job_detail(job: JobView, tasks: Sequence[TaskView]) -> RenderableType:
    """The job, `tasks` (its first ones: a large job's are not all shown) and its latest
    events."""
    head = _table(None, "", "")
    head.show_header = False
    for key, value in (("Name", job.name), ("User", job.user or "-"), ("Queue", job.queue),
                       ("Priority", job.priority_class or "-"),
                       ("Submitted", _when(job.created))):
        head.add_row(key, value)
    head.add_row("State", _state(job.state) + (" (held)" if job.held else ""))
    for key, mapping in (("Labels", job.labels), ("Annotations", job.annotations)):
        if mapping:
            head.add_row(key, ", ".join(f"{k}={v}" for k, v in mapping.items()))
    if job.imported is not None:
        head.add_row("Imported", f"from {job.imported} (shoal get {job.name} --original)")
    if job.time_limit is not None:
        head.add_row("Time limit", f"{job.time_limit:g}s")
    if job.depends_on:
        head.add_row("Depends on", ", ".join(job.depends_on))
    images = [f"{g.name}: {g.image}" for g in job.groups if g.image is not None]
    if images:
        head.add_row("Images", ", ".join(images))
    if job.pending_reason is not None:
        head.add_row("Waiting", f"{job.pending_reason.kind}: {job.pending_reason.message}")
    head.add_row("Tasks", ", ".join(f"{n} {state.value}" for state, n in
                                    sorted(job.task_counts.items(), key=lambda c: c[0].value))
                 or "-")
    if job.deleting:
        head.add_row("Deleting", "removed once its tasks have stopped")
    parts: list[RenderableType] = [head, Text()]
    table = _table("Tasks", "TASK", "STATE", "KIND", "NODE", "GPUS", "STARTED", "EXIT")
    for task in tasks:
        table.add_row(*_task_row(task))
    if not tasks:
        groups = ", ".join(f"{g.name} × {g.replicas} ({_quantities(g.resources)})"
                           for g in job.groups)
        table.add_row(f"(none placed yet: {groups})", "", "", "", "", "", "")
    elif len(tasks) < job.task_total:
        table.add_row(f"… and {job.task_total - len(tasks)} more (--tasks)", "", "", "", "",
                      "", "")
    parts += [table, Text()]
    if job.events:
        parts.append(_events_table(job.events, job.name))
    return Group(*parts)


def _node_state(node: NodeView) -> Text:
    text = node.state.value + (f" ({node.reason})" if node.reason else "") + (
        " (draining)" if node.draining else "")
    return Text(text, style=NODE_STATE_STYLE.get(node.state, ""))


def nodes_table(nodes: Sequence[NodeView]) -> Table:
    table = _table(None, "NAME", "STATE", "LABELS", "CAPACITY", "ALLOCATABLE", "RESERVED")
    for node in nodes:
        labels = ",".join(f"{k}={v}" for k, v in node.labels.items()) or "-"
        table.add_row(node.name, _node_state(node), labels, _quantities(node.capacity),
                      _quantities(node.allocatable),
                      _quantities(node.reserved))
    return table


def virtual_clusters_table(vcs: Sequence[VirtualClusterView]) -> Table:
    table = _table(None, "NAME", "PARENT", "STATE", "PRIORITY", "FLEXIBLE MIN",
                   "FLEXIBLE MAX", "FIXED NODES", "GUARANTEED", "WEIGHT", "POLICY",
                   "PER USER")
    for vc in vcs:
        limits = ", ".join(f"{k}={v}" for k, v in vc.max.items()) or "unlimited"
        fixed = "; ".join(f"{len(g.get('nodes', []))} {g.get('schedulingPolicy', '')}"
                          for g in vc.fixed_size_nodes) or "-"
        if vc.fixed_size_nodes and vc.status is not None:
            fixed += " (reserved)" if vc.status.reservation == "reserved" else " (queued)"
        table.add_row(vc.name, vc.parent, vc.state, str(vc.priority), _quantities(vc.min),
                      limits, fixed,
                      _quantities(vc.guaranteed), str(vc.weight), vc.queueing_policy,
                      ", ".join(f"{k}={v}" for k, v in vc.max_per_user.items()) or "-")
    return table


def resource_flavors_table(flavors: Sequence[ResourceFlavorView]) -> Table:
    table = _table(None, "NAME", "NODE LABELS", "NODES")
    for flavor in flavors:
        labels = ",".join(f"{k}={v}" for k, v in flavor.node_labels.items()) or "(every node)"
        table.add_row(flavor.name, labels, "?" if flavor.nodes is None else str(flavor.nodes))
    return table


def priority_classes_table(pcs: Sequence[PriorityClassView]) -> Table:
    table = _table(None, "NAME", "VALUE", "DEFAULT", "PREEMPTION", "DESCRIPTION")
    for pc in pcs:
        table.add_row(pc.name, str(pc.value), "yes" if pc.global_default else "",
                      pc.preemption_policy, pc.description)
    return table
