"""Admin changes the live control loop carries out (issue 21), with real processes: a job
whose priority class is raised preempts at the next cycle, and a drain that survives a
restart of the control plane — the node stays cordoned, and what runs there is evicted by
the new plane."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from checkpointing_worker import started, task_states, worker_job
from control_support import step_until

from shoal.api import PriorityClass, SchedulerName, TaskState
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile
from shoal.store.audit import AuditNote

CLASSES = (PriorityClass("high", 1000), PriorityClass("low", 10))


def note(action: str, target: str) -> AuditNote:
    return AuditNote("root", action, target)


def test_a_raised_priority_preempts_at_the_next_cycle(
        make_plane: Callable[..., ControlPlane], out: Path) -> None:
    plane = make_plane(Profile.load("elastic"), CLASSES, 5.0)
    plane.start()
    plane.submit(worker_job("pods", out, replicas=4, priority="low",
                            scheduler=SchedulerName.DEFAULT))
    step_until(plane, lambda: all(started(out, "pods", i) for i in range(4)))
    plane.submit(worker_job("later", out, replicas=1, priority="low"))
    plane.step()
    assert task_states(plane, "later") == [TaskState.PENDING]  # equal priority: it waits
    assert task_states(plane, "pods") == [TaskState.RUNNING] * 4

    plane.set_priority("later", "high", note("job.set-priority", "later"))
    plane.step()
    assert task_states(plane, "pods").count(TaskState.RELEASING) == 1
    step_until(plane, lambda: started(out, "later", 0) is not None)
    assert [(e.actor, e.action) for e in plane.repository.audit_entries(5)] == [
        ("root", "job.set-priority")]
    (out / "release").touch()


def test_a_drain_goes_on_after_a_restart(make_plane: Callable[..., ControlPlane],
                                         out: Path) -> None:
    first = make_plane(None, CLASSES)
    first.repository.put_node(first.nodes[0])  # as `shoal up` records its nodes
    first.start()
    first.submit(worker_job("pods", out, replicas=2, priority="low"))
    step_until(first, lambda: all(started(out, "pods", i) for i in range(2)))
    # Stored as the API stores it, the plane then stopped before it evicted anything.
    first.repository.set_node_service("local", note("node.drain", "local"),
                                      cordoned=True, draining=True)
    first.repository.put_node(first.nodes[0])  # what `shoal up` records at its start

    second = make_plane(None, CLASSES)
    second.start()
    assert [n.schedulable for n in second.nodes] == [False]
    step_until(second, lambda: task_states(second, "pods") == [TaskState.PENDING] * 2)
    step_until(second, lambda: second.repository.draining_nodes() == [])
    [stored] = second.repository.node_records()
    assert (stored.phase.value, stored.draining) == ("Cordoned", False)
    second.step()
    assert task_states(second, "pods") == [TaskState.PENDING] * 2  # nowhere to go
    second.set_node_service("local", note("node.uncordon", "local"), cordoned=False)
    step_until(second, lambda: started(out, "pods", 0, attempt=2) is not None)
    (out / "release").touch()
