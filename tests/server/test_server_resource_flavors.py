"""Resource flavors through the API (issue 16): created by an admin as `ResourceFlavor`
documents, listed to every user; a virtual cluster's `flavors` must name stored ones, and
its quota on a flavor must fit that flavor's nodes (this cluster: two 8-GPU nodes labelled
`gpu-type: a100`)."""

from __future__ import annotations

from typing import Any

from server_helpers import Api

YAML = {"Content-Type": "application/yaml"}


def flavor(name: str, labels: str) -> str:
    return (f"apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {{name: {name}}}\n"
            f"spec: {{nodeLabels: {labels}}}\n")


def vc(name: str, spec: str) -> str:
    return f"apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def post(api: Api, path: str, body: str, user: str = "root") -> tuple[int, Any]:
    answer = api.request("POST", path, user, content=body, headers=YAML)
    return answer.status_code, answer.json()


def test_flavors_are_created_listed_and_named_by_virtual_clusters(api: Api) -> None:
    status, body = post(api, "/api/v1/resource-flavors",
                        flavor("a100", "{gpu-type: a100}") + "---\n"
                        + flavor("h100", "{gpu-type: h100}"))
    assert status == 201, body
    # `nodes`: how many nodes the labels match (both of this cluster's for a100, none yet
    # for h100).
    assert body == [{"name": "a100", "nodeLabels": {"gpu-type": "a100"}, "nodes": 2},
                    {"name": "h100", "nodeLabels": {"gpu-type": "h100"}, "nodes": 0}]
    assert api.request("GET", "/api/v1/resource-flavors", "bob").json() == body
    status, body = post(api, "/api/v1/virtual-clusters", vc(
        "team", "{flavors: [{name: a100, min: {gpu: 16}}, {name: h100, max: {gpu: 4}}], "
                "flavorFungibility: {whenCanBorrow: TryNextFlavor}}"))
    assert status == 201, body
    [shown] = [v for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()
               if v["name"] == "team"]
    assert shown["flavors"] == [{"name": "a100", "min": {"gpu": 16}, "max": {}},
                                {"name": "h100", "min": {}, "max": {"gpu": 4}}]
    assert shown["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor",
                                          "whenCanPreempt": "TryNextFlavor"}


def test_a_flavor_exists_once_and_only_admins_create_it(api: Api) -> None:
    assert post(api, "/api/v1/resource-flavors", flavor("a100", "{}"))[0] == 201
    status, body = post(api, "/api/v1/resource-flavors", flavor("a100", "{}"))
    assert status == 409, body
    assert post(api, "/api/v1/resource-flavors", flavor("spot", "{}"), user="bob")[0] == 403


def test_an_unknown_flavor_or_one_beyond_its_nodes_is_refused(api: Api) -> None:
    assert post(api, "/api/v1/resource-flavors", flavor("a100", "{gpu-type: a100}"))[0] == 201
    status, body = post(api, "/api/v1/virtual-clusters",
                        vc("team", "{flavors: [{name: a100}, {name: v100}]}"))
    assert status == 422, body
    [error] = body["errors"]
    assert error["path"] == "spec.flavors[1].name", error
    assert "unknown resource flavor 'v100'" in error["message"]
    status, body = post(api, "/api/v1/virtual-clusters",
                        vc("team", "{flavors: [{name: a100, min: {gpu: 17}}]}"))
    assert status == 422, body
    assert "flavor.a100/gpu" in str(body), body
    names = [v["name"] for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()]
    assert "team" not in names
