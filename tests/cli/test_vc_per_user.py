"""`shoal vc list` shows each virtual cluster's `maxPerUser` (issue 17), or '-' without one."""

from __future__ import annotations

from rich.console import Console

from shoal.cli.remote_render import virtual_clusters_table
from shoal.client import VirtualClusterView


def view(name: str, per_user: dict[str, int] | None) -> VirtualClusterView:
    data = {"name": name, "parent": "root", "flexibleResourceMin": {},
            "flexibleResourceMax": {}, "fixedSizeNodes": [], "guaranteed": {}, "weight": 1,
            "queueingPolicy": "priority"}
    if per_user is not None:
        data["maxPerUser"] = per_user
    return VirtualClusterView.from_json(data)


def test_vc_list_shows_max_per_user() -> None:
    capped, plain = view("capped", {"gpu": 4, "cpu": 16000}), view("plain", None)
    assert capped.max_per_user == {"gpu": 4, "cpu": 16000} and plain.max_per_user == {}
    console = Console(width=240, color_system=None)
    with console.capture() as captured:
        console.print(virtual_clusters_table([capped, plain]))
    lines = captured.get().splitlines()
    assert "PER USER" in lines[0]
    assert next(line for line in lines if line.startswith("capped ")).rstrip().endswith(
        "gpu=4, cpu=16000")
    assert next(line for line in lines if line.startswith("plain ")).rstrip().endswith("-")
