"""Creating virtual clusters through the API with seed 003's fields, and the refusals of
what this cluster (two nodes of 8 GPUs, `team-a` stored with no minimum) could not honour:
422 with the field and the reason, and nothing stored."""

from __future__ import annotations

from typing import Any

from server_helpers import Api, job_yaml

from shoal.client import VirtualClusterView

YAML = {"Content-Type": "application/yaml"}


def vc(name: str, spec: str) -> str:
    return f"apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def create(api: Api, body: str) -> tuple[int, Any]:
    answer = api.request("POST", "/api/v1/virtual-clusters", "root", content=body,
                         headers=YAML)
    return answer.status_code, answer.json()


def message(body: Any) -> str:
    [error] = body["errors"]
    return str(error["message"])


def names(api: Api) -> list[str]:
    return [v["name"] for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()]


def test_a_virtual_cluster_with_fixed_size_nodes_is_created_and_shown(api: Api) -> None:
    status, body = create(api, vc("tune", "{flexibleResourceMin: {cpu: 2}, "
                                  "flexibleResourceMax: {cpu: 8}, fixedSizeNodes: "
                                  "[{schedulingPolicy: STRICT_SPREAD, nodes: "
                                  "[{resources: {gpu: 1}, labels: {bundle_index: '0'}}, "
                                  "{resources: {gpu: 1}}]}]}"))
    assert status == 201, body
    [shown] = [v for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()
               if v["name"] == "tune"]
    assert shown == body[0] | {"status": shown["status"]}  # a creation shows no status
    assert shown["flexibleResourceMin"] == {"cpu": "2"}
    assert shown["flexibleResourceMax"] == {"cpu": 8000}
    assert shown["guaranteed"] == {"cpu": "2", "gpu": 2}
    assert shown["fixedSizeNodes"] == [{
        "schedulingPolicy": "STRICT_SPREAD",
        "nodes": [{"resources": {"gpu": 1}, "labels": {"bundle_index": "0"}},
                  {"resources": {"gpu": 1}, "labels": {}}]}]
    view = VirtualClusterView.from_json(shown)  # what shoal.client makes of it
    assert (view.min, view.max, view.guaranteed) == ({"cpu": "2"}, {"cpu": 8000},
                                                     {"cpu": "2", "gpu": 2})
    assert view.fixed_size_nodes == shown["fixedSizeNodes"]


def test_strict_spread_over_more_nodes_than_the_cluster_has_is_refused(api: Api) -> None:
    three = "{resources: {gpu: 1}}"
    status, body = create(api, vc("spread", "{fixedSizeNodes: [{schedulingPolicy: "
                                  f"STRICT_SPREAD, nodes: [{three}, {three}, {three}]}}]}}"))
    assert status == 422
    [error] = body["errors"]
    assert error["path"] == "spec.fixedSizeNodes[0]"
    assert "'spread'" in message(body) and "STRICT_SPREAD needs 3 distinct nodes" in \
        message(body)
    assert "spread" not in names(api)


def test_guarantees_beyond_the_cluster_or_the_parent_are_refused(api: Api) -> None:
    status, body = create(api, vc("greedy", "{fixedSizeNodes: [{nodes: [{resources: "
                                  "{gpu: 8}}, {resources: {gpu: 8}}]}], "
                                  "flexibleResourceMin: {gpu: 1}}"))
    assert status == 422, body
    assert body["errors"][0]["path"] == "spec.flexibleResourceMin"
    assert "more than 'root' can guarantee" in message(body)
    # team-a (stored, no minimum) cannot promise its new child anything.
    status, body = create(api, vc("sub", "{parent: team-a, flexibleResourceMin: {gpu: 1}}"))
    assert status == 422, body
    assert "more than 'team-a' can guarantee" in message(body)
    # The same child with a parent sent in the same body that holds it: accepted.
    status, body = create(api, vc("org", "{flexibleResourceMin: {gpu: 4}}") + "---\n"
                          + vc("org-sub", "{parent: org, fixedSizeNodes: [{nodes: "
                               "[{resources: {gpu: 4}}]}]}"))
    assert status == 201, body
    assert {"greedy", "sub"}.isdisjoint(names(api)) and {"org", "org-sub"} <= set(names(api))


def test_introspection_shows_the_tree_usage_and_jobs(api: Api) -> None:
    assert api.submit(job_yaml("train", queue="team-a", replicas=2, gpu=2)).status_code == 201
    root = api.request("GET", "/api/v1/cluster", "bob").json()
    assert root["name"] == "root" and root["parent"] is None
    assert set(root["children"]) >= {"team-a", "default"}
    assert root["guaranteed"]["gpu"] == 16 and root["available"]["gpu"] == 16
    listed = {v["name"]: v for v in api.request("GET", "/api/v1/virtual-clusters",
                                                "bob").json()}
    team = listed["team-a"]["status"]
    assert team["parent"] == "root" and team["pendingJobs"] == 1
    assert (team["runningJobs"], team["runningTasks"], team["used"]) == (0, 0, {})
    one = api.request("GET", "/api/v1/virtual-clusters/team-a", "bob").json()
    assert one == listed["team-a"]
    default = api.request("GET", "/api/v1/virtual-clusters/default", "bob").json()
    assert default["status"]["parent"] == "root" and default["guaranteed"] == {}
    missing = api.request("GET", "/api/v1/virtual-clusters/nope", "bob")
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["path"] == "path.name"


def test_a_scheduler_that_does_not_answer_in_time_gives_503(api: Api) -> None:
    api.scheduler.stuck = True
    for url in ("/api/v1/cluster", "/api/v1/virtual-clusters",
                "/api/v1/virtual-clusters/team-a"):
        answer = api.request("GET", url, "bob")
        assert answer.status_code == 503, url
        assert "did not answer in time" in answer.json()["errors"][0]["message"]


def test_fixed_size_nodes_are_refused_when_the_stored_ones_leave_no_room(api: Api) -> None:
    def fixed(name: str, gpus: int) -> str:
        return vc(name, f"{{fixedSizeNodes: [{{nodes: [{{resources: {{gpu: {gpus}}}}}]}}]}}")
    assert create(api, fixed("a", 6))[0] == 201
    assert create(api, fixed("b", 6))[0] == 201
    status, body = create(api, fixed("c", 3))  # 15 of 16 GPUs, but 2 left on each node
    assert status == 422, body
    assert body["errors"][0]["path"] == "spec.fixedSizeNodes"
    assert "'c'" in message(body) and "cannot all be carved" in message(body)
    assert "c" not in names(api)


def test_introspection_shows_virtual_nodes_and_their_physical_node(api: Api) -> None:
    status, body = create(api, vc("pg", "{fixedSizeNodes: [{schedulingPolicy: STRICT_SPREAD, "
                                        "nodes: [{resources: {gpu: 4}, labels: {role: ps}}, "
                                        "{resources: {gpu: 2}}]}]}"))
    assert status == 201, body
    one = api.request("GET", "/api/v1/virtual-clusters/pg", "bob").json()["status"]
    assert one["reservation"] == "reserved"
    nodes = one["virtualNodes"]
    assert [(v["name"], v["total"]["gpu"], v["available"]["gpu"]) for v in nodes] == \
        [("pg/0", 4, 4), ("pg/1", 2, 2)]
    assert len({v["node"] for v in nodes}) == 2  # STRICT_SPREAD: two physical nodes
    assert nodes[0]["labels"]["role"] == "ps"
    assert nodes[0]["labels"]["shoal.io/virtual-cluster"] == "pg"
    assert one["guaranteed"]["gpu"] == 6 and one["available"]["gpu"] >= 6
    plain = api.request("GET", "/api/v1/virtual-clusters/team-a", "bob").json()["status"]
    assert plain["reservation"] == "" and plain["virtualNodes"] == []
    assert plain["flexibleNodes"] == []  # nothing of team-a runs


def test_a_job_with_its_own_virtual_cluster_is_stored_shown_and_checked(api: Api) -> None:
    bundles = ("\n  virtualCluster:\n    flexibleResourceMax: {gpu: 0}\n"
               "    fixedSizeNodes:\n      - schedulingPolicy: STRICT_SPREAD\n"
               "        nodes: [{resources: {gpu: 2}}, {resources: {gpu: 2}}]")
    created = api.submit(job_yaml("pg", gpu=2, extra_spec=bundles))
    assert created.status_code == 201, created.text
    own = created.json()["spec"]["virtualCluster"]
    assert own["name"] == "job:pg" and own["flexibleResourceMax"] == {"gpu": 0}
    assert own["fixedSizeNodes"][0]["schedulingPolicy"] == "STRICT_SPREAD"
    # While the job lives its cluster is in the tree, with its bundles carved.
    listed = {v["name"]: v for v in api.request("GET", "/api/v1/virtual-clusters",
                                                "bob").json()}
    assert listed["job:pg"]["parent"] == "default"
    one = api.request("GET", "/api/v1/virtual-clusters/job:pg", "bob").json()
    assert one["status"]["reservation"] == "reserved"
    assert [v["name"] for v in one["status"]["virtualNodes"]] == ["job:pg/0", "job:pg/1"]
    assert "job:pg" in api.request("GET", "/api/v1/virtual-clusters/default",
                                   "bob").json()["status"]["children"]
    # Two nodes of 8 GPUs: three bundles of 9 can never be carved; refused with the reason.
    huge = ("\n  virtualCluster:\n    fixedSizeNodes:\n"
            "      - nodes: [{resources: {gpu: 9}}]")
    refused = api.submit(job_yaml("huge", extra_spec=huge))
    assert refused.status_code == 422, refused.text
    assert "spec.virtualCluster.fixedSizeNodes[0].nodes[0].resources" in refused.text
    bad = api.submit(job_yaml("bad", extra_spec="\n  virtualCluster:\n"
                                                "    flexibleResourceMin: {gpu: 4}\n"
                                                "    flexibleResourceMax: {gpu: 2}"))
    assert bad.status_code == 422, bad.text
    assert bad.json()["errors"][0]["path"] == "spec.virtualCluster.flexibleResourceMin"


def replace_vc(api: Api, name: str, spec: str) -> tuple[int, Any]:
    answer = api.request("PUT", f"/api/v1/virtual-clusters/{name}", "root",
                         content=vc(name, spec), headers=YAML)
    return answer.status_code, answer.json()


def shown(api: Api, name: str) -> dict[str, Any]:
    answer = api.request("GET", f"/api/v1/virtual-clusters/{name}", "bob")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _department(api: Api) -> None:
    # dept guarantees 8 GPUs, up to 12; its children are guaranteed 6 and 2 of them.
    status, body = create(api, vc("dept", "{flexibleResourceMin: {gpu: 8}, "
                                  "flexibleResourceMax: {gpu: 12}}") + "---\n"
                          + vc("vision", "{parent: dept, flexibleResourceMin: {gpu: 6}}")
                          + "---\n" + vc("speech", "{parent: dept, "
                                                   "flexibleResourceMin: {gpu: 2}}"))
    assert status == 201, body


def test_a_replacement_may_not_lower_a_parents_minimum_below_its_childrens(api: Api) -> None:
    _department(api)
    before = shown(api, "dept")
    status, body = replace_vc(api, "dept", "{flexibleResourceMin: {gpu: 7}, "
                                           "flexibleResourceMax: {gpu: 12}}")
    assert status == 422, body
    [error] = body["errors"]
    assert error["path"] == "spec.flexibleResourceMin"
    assert "'dept'" in message(body) and "'vision', 'speech'" in message(body)
    assert "over in gpu" in message(body)
    assert shown(api, "dept") == before  # nothing stored
    # Exactly the children's sum, and a higher maximum: accepted and stored.
    status, body = replace_vc(api, "dept", "{flexibleResourceMin: {gpu: 8}, "
                                           "flexibleResourceMax: {gpu: 16}}")
    assert status == 200, body
    assert shown(api, "dept")["flexibleResourceMax"] == {"gpu": 16}


def test_a_replacement_may_not_cap_a_parent_below_a_childs_guarantee(api: Api) -> None:
    _department(api)
    before = shown(api, "dept")
    status, body = replace_vc(api, "dept", "{flexibleResourceMax: {gpu: 4}}")
    assert status == 422, body
    [error] = body["errors"]
    assert error["path"] == "spec.flexibleResourceMax"
    assert "'vision'" in message(body) and "gpu 6 > 4" in message(body)
    assert shown(api, "dept") == before
    # A maximum lowered under the parent's own minimum is refused by the document itself.
    status, body = replace_vc(api, "dept", "{flexibleResourceMin: {gpu: 8}, "
                                           "flexibleResourceMax: {gpu: 6}}")
    assert status == 422, body
    assert shown(api, "dept") == before


def test_a_replaced_child_is_still_judged_under_its_parent(api: Api) -> None:
    _department(api)
    status, body = replace_vc(api, "speech", "{parent: dept, flexibleResourceMin: {gpu: 3}}")
    assert status == 422, body
    assert body["errors"][0]["path"] == "spec.flexibleResourceMin"
    assert "more than 'dept' can guarantee" in message(body)
    assert shown(api, "speech")["flexibleResourceMin"] == {"gpu": 2}
    # A leaf has no children to hold: lowering its own quota is fine.
    status, body = replace_vc(api, "speech", "{parent: dept, flexibleResourceMin: {gpu: 1}, "
                                             "flexibleResourceMax: {gpu: 1}}")
    assert status == 200, body
