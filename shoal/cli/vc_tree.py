"""`shoal vc tree`: the virtual-cluster tree drawn with rich, one line per virtual cluster
with a usage bar in the cluster's main dimension (GPUs when it has any, else CPUs).

The bar spans what the virtual cluster could ever use (its ceiling, or the whole cluster
where it has none): green is used within its guarantee, yellow is borrowed beyond it, and
the dots are what it was guaranteed but does not use (for the root, which owns all of its
capacity: what is idle). A virtual cluster's fixed-size virtual nodes hang under it, each
with its physical node and its own bar; one still waiting for them says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

from shoal.api.resources import CPU, GPU, parse_quantity

if TYPE_CHECKING:
    from shoal.client import VirtualClusterStatusView, VirtualClusterView

BAR_WIDTH = 20


def vc_tree(root: VirtualClusterStatusView, vcs: Sequence[VirtualClusterView]) -> Tree:
    statuses = {vc.name: vc.status for vc in vcs if vc.status is not None}
    dimension = GPU if _amount(root.guaranteed, GPU) > 0 else CPU
    capacity = _amount(root.guaranteed, dimension)
    tree = Tree(_line(root, dimension, capacity, root=True))
    _grow(tree, root.children, statuses, dimension, capacity)
    return tree


def _grow(branch: Tree, children: Sequence[str],
          statuses: Mapping[str, VirtualClusterStatusView], dimension: str,
          capacity: int) -> None:
    for name in children:
        status = statuses.get(name)
        if status is None:  # created since the tree was read
            continue
        twig = branch.add(_line(status, dimension, capacity))
        if status.reservation and status.reservation != "reserved":
            twig.add(Text(f"waiting for its fixed-size nodes: {status.reservation}",
                          style="red"))
        for virtual in status.virtual_nodes:
            twig.add(_virtual_line(virtual, dimension))
        _grow(twig, status.children, statuses, dimension, capacity)


def _virtual_line(virtual: Mapping[str, Any], dimension: str) -> Text:
    size = _amount(virtual.get("total") or {}, dimension)
    used = _amount(virtual.get("used") or {}, dimension)
    unit = "GPUs" if dimension == GPU else "CPUs"
    line = Text(f"{virtual.get('name', '?'):<14}", style="cyan")
    line.append_text(_bar(used, size, max(1, size)))
    line.append(f" {_shown(used, dimension)}/{_shown(size, dimension)} {unit} used, "
                f"virtual node on {virtual.get('node', '?')}", style="dim")
    return line


def _line(status: VirtualClusterStatusView, dimension: str, capacity: int, *,
          root: bool = False) -> Text:
    used = _amount(status.used, dimension)
    guaranteed = _amount(status.guaranteed, dimension)
    ceiling = status.ceiling.get(dimension)
    scale = max(1, capacity if ceiling is None else min(ceiling, capacity) or 1)
    unit = "GPUs" if dimension == GPU else "CPUs"
    line = Text(f"{status.name:<14}", style="bold")
    # The root's capacity is all its own: nothing it uses is borrowed.
    line.append_text(_bar(used, scale if root else guaranteed, scale))
    shown = _shown(used, dimension)
    if root:
        line.append(f" {shown}/{_shown(capacity, dimension)} {unit} used")
    else:
        line.append(f" {shown} {unit} used, {_shown(guaranteed, dimension)} guaranteed, "
                    f"max {'-' if ceiling is None else _shown(ceiling, dimension)}")
        borrowed = _amount(status.borrowed, dimension)
        if borrowed:
            line.append(f", {_shown(borrowed, dimension)} borrowed", style="yellow")
    line.append(f", {_shown(_amount(status.available, dimension), dimension)} available; "
                f"jobs {status.running_jobs} running, {status.pending_jobs} waiting",
                style="dim")
    return line


def _bar(used: int, guaranteed: int, scale: int) -> Text:
    def cells(amount: int) -> int:
        return min(BAR_WIDTH, round(BAR_WIDTH * amount / scale))
    within = cells(min(used, guaranteed))
    borrowed = cells(used) - within
    owed = max(0, cells(guaranteed) - within - borrowed)
    rest = max(0, BAR_WIDTH - within - borrowed - owed)
    bar = Text("[")
    bar.append("█" * within, style="green")
    bar.append("█" * borrowed, style="yellow")
    bar.append("·" * owed, style="green")
    bar.append(" " * rest)
    bar.append("]")
    return bar


def _amount(values: Mapping[str, str | int], dimension: str) -> int:
    value = values.get(dimension)
    return 0 if value is None else parse_quantity(dimension, value)


def _shown(amount: int, dimension: str) -> str:
    if dimension == CPU:  # millicores
        return f"{amount / 1000:g}"
    return str(amount)
