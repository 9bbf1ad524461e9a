"""What holds each node now: the tasks bound to a node (bound, running or still stopping)
with their GPU indices, their job, user and queue — one read for the whole cluster, for
`GET /api/v1/placements` (the dashboard's nodes page). A function over a `Store`, not a
`Repository` base class: it only reads."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from shoal.api import TaskState
from shoal.store.engine import Store
from shoal.store.models import JobRow, TaskRow

HOLDING_STATES = tuple(s.value for s in TaskState if s.holds_resources)


@dataclass(frozen=True, slots=True)
class Placement:
    """One task that holds part of a node now."""

    node: str
    job: str
    group: str
    index: int
    state: TaskState
    gpus: tuple[int, ...]
    user: str | None
    queue: str
    started: float | None


def placements(store: Store, node: str | None = None) -> list[Placement]:
    """The tasks holding resources now (on `node` only, when given), by node, job and task.
    As many as the cluster can hold at once: bounded by its capacity, not by history."""
    query = (select(TaskRow.node, JobRow.name, TaskRow.group_name, TaskRow.task_index,
                    TaskRow.state, TaskRow.gpus, JobRow.user, JobRow.queue, TaskRow.started)
             .join(JobRow, TaskRow.job_id == JobRow.id)
             .where(TaskRow.state.in_(HOLDING_STATES), TaskRow.node.is_not(None)))
    if node is not None:
        query = query.where(TaskRow.node == node)
    with store.reads.begin() as session:
        rows = session.execute(query).all()
    found = [Placement(node=r[0] or "", job=r[1], group=r[2], index=r[3], state=TaskState(r[4]),
                       gpus=tuple(int(g) for g in r[5] or ()), user=r[6], queue=r[7],
                       started=r[8]) for r in rows]
    found.sort(key=lambda p: (p.node, p.job, p.group, p.index))
    return found
