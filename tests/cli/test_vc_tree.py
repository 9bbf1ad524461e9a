"""`shoal vc tree`'s drawing of fixed-size virtual nodes and of a reservation still queued,
from the API's JSON (the tree against a live server is in test_remote_cli.py)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from shoal.cli.vc_tree import vc_tree
from shoal.client import VirtualClusterStatusView, VirtualClusterView


def status(name: str, parent: str | None, children: list[str], used: int, **extra: Any
           ) -> dict[str, Any]:
    return {"name": name, "parent": parent, "children": children, "guaranteed": {"gpu": 4},
            "ceiling": {}, "used": {"gpu": used}, "available": {"gpu": 0},
            "borrowed": {}, "pendingJobs": 0, "runningJobs": 1, "runningTasks": 1, **extra}


def vc(name: str, state: dict[str, Any]) -> VirtualClusterView:
    return VirtualClusterView.from_json({
        "name": name, "parent": "root", "flexibleResourceMin": {}, "flexibleResourceMax": {},
        "fixedSizeNodes": [], "guaranteed": {}, "weight": 1, "queueingPolicy": "priority",
        "status": state})


def draw(root: dict[str, Any], *vcs: VirtualClusterView) -> list[str]:
    console = Console(width=160, color_system=None)
    with console.capture() as captured:
        console.print(vc_tree(VirtualClusterStatusView.from_json(root), list(vcs)))
    return captured.get().splitlines()


def test_virtual_nodes_hang_under_their_cluster_with_their_physical_node() -> None:
    tune = status("tune", "root", [], 3, reservation="reserved", virtualNodes=[
        {"name": "tune/0", "node": "node-0", "labels": {}, "total": {"gpu": 2},
         "used": {"gpu": 2}, "available": {}},
        {"name": "tune/1", "node": "node-1", "labels": {}, "total": {"gpu": 2},
         "used": {"gpu": 1}, "available": {"gpu": 1}}])
    late = status("late", "root", [], 0, reservation="fixedSizeNodes[0]: STRICT_SPREAD "
                  "needs 2 distinct nodes with room for its virtual nodes; not that many "
                  "have it now")
    lines = draw(status("root", None, ["late", "tune"], 3, guaranteed={"gpu": 16}),
                 vc("tune", tune), vc("late", late))
    text = "\n".join(lines)
    assert "tune/0" in text and "2/2 GPUs used, virtual node on node-0" in text
    assert "1/2 GPUs used, virtual node on node-1" in text
    assert "waiting for its fixed-size nodes: fixedSizeNodes[0]: STRICT_SPREAD" in text
    # Each virtual node is drawn under its own cluster, not under the other.
    tune_at = next(i for i, line in enumerate(lines) if "tune " in line)
    assert all(i > tune_at for i, line in enumerate(lines) if "virtual node on" in line)
    assert "reserved" not in text


def test_vc_list_says_whether_fixed_size_nodes_are_reserved() -> None:
    from shoal.cli.remote_render import virtual_clusters_table

    def listed(reservation: str) -> VirtualClusterView:
        view = vc("pg", status("pg", "root", [], 0, reservation=reservation))
        return VirtualClusterView.from_json({**view.raw, "fixedSizeNodes": [
            {"schedulingPolicy": "STRICT_SPREAD", "nodes": [{"resources": {"gpu": 1}}] * 2}]})

    console = Console(width=200, color_system=None)
    with console.capture() as captured:
        console.print(virtual_clusters_table([listed("reserved")]))
        console.print(virtual_clusters_table([listed("fixedSizeNodes[0]: not now")]))
    text = captured.get()
    assert "2 STRICT_SPREAD (reserved)" in text and "2 STRICT_SPREAD (queued)" in text
    closed = VirtualClusterView.from_json({**listed("reserved").raw, "state": "Closed",
                                           "priority": 7})
    with console.capture() as captured:
        console.print(virtual_clusters_table([closed]))
    row = next(line for line in captured.get().splitlines() if line.startswith("pg "))
    assert row.split()[1:4] == ["root", "Closed", "7"]
