"""The audit log and the admin changes of `shoal.store.admin` on SQLite and PostgreSQL:
each change is written with its entry in one transaction (a refused one writes neither),
entries page newest first and filter by actor and action, and a revoked or deleted user's
token stops working at once."""

from __future__ import annotations

import pytest
from store_helpers import make_job

from shoal.api import JobState, Node, PriorityClass, Resources, VirtualCluster
from shoal.api.queue_policy import QueueStatus
from shoal.store import NotFoundError, Repository
from shoal.store.admin import AdminConflictError
from shoal.store.audit import DETAIL_CHARS, SYSTEM_ACTOR, AuditNote


def note(action: str, target: str, detail: str = "", actor: str = "root") -> AuditNote:
    return AuditNote(actor, action, target, detail)


def actions(repo: Repository) -> list[tuple[str, str, str]]:
    return [(e.actor, e.action, e.target) for e in repo.audit_entries(100)]


def test_a_refused_change_writes_no_entry_and_a_drained_cluster_goes_once_empty(
        repo: Repository) -> None:
    repo.put_virtual_cluster(VirtualCluster("team-a"), note("vc.create", "team-a"))
    repo.put_virtual_cluster(VirtualCluster("team-b"))  # no note: nothing audited
    repo.submit(make_job("busy", queue="team-a"))
    with pytest.raises(AdminConflictError, match="busy"):
        repo.delete_virtual_cluster("team-a", note("vc.delete", "team-a"))
    with pytest.raises(NotFoundError):
        repo.delete_virtual_cluster("nowhere", note("vc.delete", "nowhere"))
    assert actions(repo) == [("root", "vc.create", "team-a")]

    drained = repo.drain_virtual_cluster("team-a", note("vc.drain", "team-a"))
    assert drained.state is QueueStatus.CLOSED
    assert repo.deleting_virtual_clusters() == {"team-a"}
    repo.put_virtual_cluster(VirtualCluster("team-a"))  # opened again: the drain is off
    assert repo.deleting_virtual_clusters() == set()
    repo.drain_virtual_cluster("team-a", note("vc.drain", "team-a"))
    assert repo.delete_drained_virtual_clusters() == []
    repo.transition_job("busy", JobState.CANCELLED, "test")
    assert repo.delete_drained_virtual_clusters() == ["team-a"]
    assert [vc.name for vc in repo.list_virtual_clusters()] == ["team-b"]
    assert actions(repo)[0] == (SYSTEM_ACTOR, "vc.delete", "team-a")
    assert repo.get_job("busy") is not None  # its ended jobs are kept


def test_priority_classes_nodes_and_a_job_priority(repo: Repository) -> None:
    repo.put_priority_class(PriorityClass("vip", 100))
    repo.submit(make_job("train"))
    repo.replace_priority_class(PriorityClass("vip", 200), note("pc.update", "vip"))
    assert [p.value for p in repo.list_priority_classes()] == [200]
    job = repo.set_job_priority("train", "vip", note("job.set-priority", "train"))
    assert job.priority_class == "vip"
    with pytest.raises(AdminConflictError, match="train"):
        repo.delete_priority_class("vip", note("pc.delete", "vip"))
    repo.transition_job("train", JobState.CANCELLED, "test")
    with pytest.raises(AdminConflictError, match="ended"):
        repo.set_job_priority("train", "normal", note("job.set-priority", "train"))
    repo.delete_priority_class("vip", note("pc.delete", "vip"))

    repo.put_node(Node("gpu-0", Resources.of(gpu=8)))
    record = repo.set_node_service("gpu-0", note("node.drain", "gpu-0"), cordoned=True,
                                   draining=True)
    assert (record.node.schedulable, record.draining) == (False, True)
    repo.put_node(Node("gpu-0", Resources.of(gpu=8)))  # a re-declaration keeps the drain
    assert repo.draining_nodes() == ["gpu-0"]
    repo.node_drained("gpu-0")
    assert [(r.phase.value, r.draining) for r in repo.node_records()] == [("Ready", False)]
    assert [a for _, a, _ in actions(repo)] == ["node.drain", "pc.delete",
                                                "job.set-priority", "pc.update"]


def test_users_and_tokens(repo: Repository) -> None:
    repo.create_user("alice", queues=["default"], note=note("user.create", "alice"))
    own = repo.issue_token("alice")
    job_token = repo.issue_token("alice", job="train")
    assert repo.authenticate(own) is not None  # cached from now on
    assert [u.name for u in repo.list_users()] == ["alice"]
    updated = repo.update_user("alice", note("user.update", "alice"), admin=True)
    assert (updated.admin, updated.queues) == (True, ("default",))
    authenticated = repo.authenticate(own)
    assert authenticated is not None and authenticated.admin  # the cache was dropped
    fresh = repo.issue_user_token("alice", note("user.token.issue", "alice"))
    assert repo.revoke_user_tokens("alice", note("user.token.revoke", "alice")) == 2
    assert repo.authenticate(own) is None and repo.authenticate(fresh) is None
    assert repo.authenticate(job_token) is not None  # its job's tasks keep theirs
    assert repo.delete_user("alice", note("user.delete", "alice")) == 1
    assert repo.authenticate(job_token) is None and repo.get_user("alice") is None
    with pytest.raises(NotFoundError):
        repo.update_user("alice", note("user.update", "alice"), admin=False)


def test_entries_page_newest_first_and_filter(repo: Repository) -> None:
    for i in range(5):
        repo.record_audit(note("user.create" if i % 2 else "node.cordon", f"t-{i}",
                               actor="root" if i < 3 else "ops"))
    repo.record_audit(note("user_create", "odd"))  # `_` is no wildcard in a prefix
    repo.record_audit(note("vc.update", "long", "x" * (DETAIL_CHARS * 2)))
    entries = repo.audit_entries(3)
    assert [e.target for e in entries] == ["long", "odd", "t-4"]
    assert len(entries[0].detail) == DETAIL_CHARS
    older = repo.audit_entries(3, before=entries[-1].id)
    assert [e.target for e in older] == ["t-3", "t-2", "t-1"]
    assert [e.target for e in repo.audit_entries(10, actor="ops")] == ["t-4", "t-3"]
    assert [e.target for e in repo.audit_entries(10, action="user.")] == ["t-3", "t-1"]
    assert [e.target for e in repo.audit_entries(10, action="node.cordon")] == \
        ["t-4", "t-2", "t-0"]
