"""The admin changes of issue 21 on the real app over SQLite and PostgreSQL (the
store-backed scheduler of `server_helpers`): virtual clusters deleted and drained, priority
classes replaced and deleted, users listed, updated and deleted, tokens issued and revoked,
nodes cordoned, drained and uncordoned, a job's priority class changed — each refusal with
its status and field, and each change in the audit log."""

from __future__ import annotations

from typing import Any

from server_helpers import Api, job_yaml

from shoal.api import JobState

YAML = {"Content-Type": "application/yaml"}


def vc(name: str, spec: str = "{}", parent: str | None = None) -> str:
    parent_line = f", parent: {parent}" if parent else ""
    inner = spec[1:-1]
    body = "{" + ", ".join(p for p in (inner, parent_line[2:]) if p) + "}"
    return (f"apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {{name: {name}}}\n"
            f"spec: {body}\n")


def pc(name: str, value: int) -> str:
    return (f"apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\n"
            f"value: {value}\n")


def error(answer: Any) -> tuple[int, str | None, str]:
    [item] = answer.json()["errors"]
    return answer.status_code, item["path"], item["message"]


def audit(api: Api, **query: str) -> list[tuple[str, str, str]]:
    answer = api.request("GET", "/api/v1/audit", "root", params=query)
    assert answer.status_code == 200, answer.text
    return [(e["actor"], e["action"], e["target"]) for e in answer.json()["items"]]


def test_a_virtual_cluster_in_use_is_refused_then_drained_and_deleted_once_empty(
        api: Api) -> None:
    assert api.request("POST", "/api/v1/virtual-clusters", "root",
                       content=vc("team-b") + "---\n" + vc("team-b-sub", parent="team-b"),
                       headers=YAML).status_code == 201
    assert api.submit(job_yaml("busy", queue="team-a")).status_code == 201

    refused = api.request("DELETE", "/api/v1/virtual-clusters/team-a", "root")
    status, path, message = error(refused)
    assert (status, path) == (409, "path.name")
    assert "busy" in message and "drain" in message
    status, _, message = error(api.request("DELETE", "/api/v1/virtual-clusters/team-b", "root"))
    assert status == 409 and "team-b-sub" in message
    status, _, message = error(api.request("DELETE", "/api/v1/virtual-clusters/team-b?drain=true",
                                           "root"))
    assert status == 409 and "team-b-sub" in message
    assert error(api.request("DELETE", "/api/v1/virtual-clusters/nowhere", "root"))[:2] == \
        (404, "path.name")

    assert api.request("DELETE", "/api/v1/virtual-clusters/team-b-sub", "root"
                       ).status_code == 204
    drained = api.request("DELETE", "/api/v1/virtual-clusters/team-a?drain=true", "root")
    assert drained.status_code == 202, drained.text
    assert drained.json()["name"] == "team-a" and drained.json()["state"] == "Closed"
    assert api.scheduler.catalog_reloads >= 1  # closed from the next cycle on
    assert api.repository.delete_drained_virtual_clusters() == []  # `busy` has not ended
    api.scheduler.cancel("busy")
    assert api.repository.delete_drained_virtual_clusters() == ["team-a"]
    assert "team-a" not in {v.name for v in api.repository.list_virtual_clusters()}
    assert api.request("GET", "/api/v1/jobs/busy", "alice").json()["status"]["state"] == \
        JobState.CANCELLED.value
    assert audit(api)[:4] == [("shoal", "vc.delete", "team-a"), ("root", "vc.drain", "team-a"),
                              ("root", "vc.delete", "team-b-sub"),
                              ("root", "vc.create", "team-b-sub")]


def test_a_quota_change_that_breaks_the_tree_is_refused_with_the_field(api: Api) -> None:
    body = vc("team-b", "{flexibleResourceMin: {gpu: 4}}") + "---\n" + \
        vc("team-b-sub", "{flexibleResourceMin: {gpu: 4}}", parent="team-b")
    assert api.request("POST", "/api/v1/virtual-clusters", "root", content=body,
                       headers=YAML).status_code == 201
    shrunk = api.request("PUT", "/api/v1/virtual-clusters/team-b", "root",
                         content=vc("team-b", "{flexibleResourceMin: {gpu: 2}}"), headers=YAML)
    status, path, message = error(shrunk)
    assert status == 422 and path is not None and "flexibleResourceMin" in path, message
    grown = api.request("PUT", "/api/v1/virtual-clusters/team-b", "root",
                        content=vc("team-b", "{flexibleResourceMin: {gpu: 8}}"), headers=YAML)
    assert grown.status_code == 200, grown.text
    assert api.scheduler.catalog_reloads >= 2  # the next cycle takes the new quota up
    assert audit(api, action="vc.update") == [("root", "vc.update", "team-b")]


def test_priority_classes_are_replaced_and_deleted_unless_in_use(api: Api) -> None:
    assert api.request("POST", "/api/v1/priority-classes", "root", content=pc("vip", 5000),
                       headers=YAML).status_code == 201
    replaced = api.request("PUT", "/api/v1/priority-classes/vip", "root",
                           content=pc("vip", 9000), headers=YAML)
    assert replaced.status_code == 200 and replaced.json()["value"] == 9000
    assert error(api.request("PUT", "/api/v1/priority-classes/vip", "root",
                             content=pc("other", 1), headers=YAML))[:2] == \
        (422, "metadata.name")
    assert error(api.request("PUT", "/api/v1/priority-classes/ghost", "root",
                             content=pc("ghost", 1), headers=YAML))[:2] == (404, "path.name")
    assert api.submit(job_yaml("urgent", extra_spec="\n  priorityClassName: vip")
                      ).status_code == 201
    status, path, message = error(api.request("DELETE", "/api/v1/priority-classes/vip", "root"))
    assert (status, path) == (409, "path.name") and "urgent" in message
    api.scheduler.cancel("urgent")
    assert api.request("DELETE", "/api/v1/priority-classes/vip", "root").status_code == 204
    assert "vip" not in {p.name for p in api.repository.list_priority_classes()}
    assert [a for _, a, _ in audit(api, action="pc.")] == ["pc.delete", "pc.update",
                                                          "pc.create"]


def test_users_are_listed_updated_and_deleted_and_their_tokens_managed(api: Api) -> None:
    listed = api.request("GET", "/api/v1/users", "root").json()
    assert [u["name"] for u in listed] == ["alice", "bob", "root"]
    updated = api.request("PATCH", "/api/v1/users/bob", "root",
                          json={"queues": ["default", "team-a"], "admin": True})
    assert updated.json() == {"name": "bob", "admin": True, "queues": ["default", "team-a"]}
    # Bob's cached token carries his new rights at once.
    assert api.request("GET", "/api/v1/users", "bob").status_code == 200
    assert error(api.request("PATCH", "/api/v1/users/bob", "root", json={"admin": "maybe"}))[:2] \
        == (422, "body.admin")
    assert error(api.request("PATCH", "/api/v1/users/bob", "root", json={"role": "x"}))[:2] \
        == (422, "body.role")
    assert error(api.request("PATCH", "/api/v1/users/nobody", "root", json={}))[:2] == \
        (404, "path.name")

    issued = api.request("POST", "/api/v1/users/alice/tokens", "root")
    assert issued.status_code == 201 and issued.json()["name"] == "alice"
    second = {"Authorization": f"Bearer {issued.json()['token']}"}
    assert api.client.get("/api/v1/users/me", headers=second).json()["name"] == "alice"
    assert api.request("GET", "/api/v1/users/me", "alice").status_code == 200  # cached now
    revoked = api.request("DELETE", "/api/v1/users/alice/tokens", "root")
    assert revoked.json() == {"revoked": 2}
    assert api.request("GET", "/api/v1/users/me", "alice").status_code == 401
    assert api.client.get("/api/v1/users/me", headers=second).status_code == 401

    assert api.submit(job_yaml("kept"), who="bob").status_code == 201
    assert error(api.request("DELETE", "/api/v1/users/root", "root"))[:2] == (409, "path.name")
    assert api.request("DELETE", "/api/v1/users/bob", "root").status_code == 204
    assert api.request("GET", "/api/v1/users/me", "bob").status_code == 401
    assert api.repository.get_job("kept") is not None  # a deleted user's jobs are kept
    assert error(api.request("DELETE", "/api/v1/users/bob", "root"))[:2] == (404, "path.name")
    assert error(api.request("POST", "/api/v1/users/bob/tokens", "root"))[:2] == \
        (404, "path.name")
    assert [a for _, a, _ in audit(api, action="user.")] == [
        "user.delete", "user.token.revoke", "user.token.issue", "user.update"]


def test_nodes_are_cordoned_drained_and_uncordoned(api: Api) -> None:
    cordoned = api.request("POST", "/api/v1/nodes/gpu-0/cordon", "root")
    assert cordoned.status_code == 200, cordoned.text
    assert (cordoned.json()["state"], cordoned.json()["draining"]) == ("Cordoned", False)
    drained = api.request("POST", "/api/v1/nodes/gpu-1/drain", "root").json()
    assert (drained["state"], drained["unschedulable"], drained["draining"]) == \
        ("Cordoned", True, True)
    assert api.repository.draining_nodes() == ["gpu-1"]
    back = api.request("POST", "/api/v1/nodes/gpu-1/uncordon", "root").json()
    assert (back["state"], back["draining"]) == ("Ready", False)
    assert api.repository.draining_nodes() == []
    assert error(api.request("POST", "/api/v1/nodes/gpu-9/drain", "root"))[:2] == \
        (404, "path.name")
    shown = {n["name"]: n["state"] for n in api.request("GET", "/api/v1/nodes", "bob").json()}
    assert shown == {"gpu-0": "Cordoned", "gpu-1": "Ready"}
    assert [a for _, a, _ in audit(api, action="node.")] == [
        "node.uncordon", "node.drain", "node.cordon"]


def test_a_job_priority_is_set_to_a_class_that_exists(api: Api) -> None:
    assert api.submit(job_yaml("train")).status_code == 201
    raised = api.request("POST", "/api/v1/jobs/train/priority", "root",
                         json={"priorityClass": "production"})
    assert raised.status_code == 200, raised.text
    assert raised.json()["spec"]["priorityClassName"] == "production"
    assert api.repository.get_job("train").priority_class == "production"  # type: ignore[union-attr]
    assert error(api.request("POST", "/api/v1/jobs/train/priority", "root",
                             json={"priorityClass": "nope"}))[:2] == (422, "body.priorityClass")
    assert error(api.request("POST", "/api/v1/jobs/train/priority", "root",
                             json={}))[:2] == (422, "body.priorityClass")
    assert error(api.request("POST", "/api/v1/jobs/ghost/priority", "root",
                             json={"priorityClass": "production"}))[:2] == (404, "path.name")
    assert api.request("POST", "/api/v1/jobs/train/priority", "alice",
                       json={"priorityClass": "production"}).status_code == 403
    api.scheduler.cancel("train")
    assert error(api.request("POST", "/api/v1/jobs/train/priority", "root",
                             json={"priorityClass": "offline"}))[:2] == (409, "path.name")
    events = api.request("GET", "/api/v1/jobs/train/events", "alice").json()["items"]
    assert any(e["kind"] == "PriorityChanged" and "production by root" in e["cause"]
               for e in events)
    assert audit(api, action="job.set-priority") == [("root", "job.set-priority", "train")]


def test_the_audit_log_pages_newest_first_and_filters(api: Api) -> None:
    for name in ("n-0", "n-1", "n-2"):
        api.request("POST", "/api/v1/users", "root", json={"name": name})
    api.request("POST", "/api/v1/nodes/gpu-0/cordon", "root")
    first = api.request("GET", "/api/v1/audit?limit=2", "root").json()
    assert [e["target"] for e in first["items"]] == ["gpu-0", "n-2"]
    assert first["items"][0]["at"].endswith("Z") and first["next"] is not None
    rest = api.request("GET", f"/api/v1/audit?limit=2&after={first['next']}", "root").json()
    assert [e["target"] for e in rest["items"]] == ["n-1", "n-0"]
    assert audit(api, actor="bob") == []
    assert api.submit(job_yaml("mine"), who="bob").status_code == 201
    assert api.request("POST", "/api/v1/jobs/mine/hold", "bob").status_code == 200
    assert audit(api, actor="bob") == [("bob", "job.hold", "mine")]
    assert len(audit(api, actor="root", action="user.create")) == 3
    assert error(api.request("GET", "/api/v1/audit?limit=0", "root"))[:2] == (422, "query.limit")
    assert api.request("GET", "/api/v1/audit", "alice").status_code == 403
