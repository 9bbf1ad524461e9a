"""`shoal up --engine`: which engine carries out Shoal's decisions, and the nodes it brings.

- `local` (the default): tasks are subprocesses of this machine; the nodes are the
  `--cluster` file's (slices of this host), else this machine as one node.
- `ray`: tasks run on the machines of a Ray cluster (`shoal.executors.ray_engine`), reached
  at `--ray-address` (a GCS address `host:port`, or `auto`: the cluster this machine is part
  of, or `RAY_ADDRESS`); the nodes are Ray's ready nodes as Ray reports them (their CPUs,
  memory, GPUs, labels), so a `--cluster` file may give virtual clusters and priority
  classes but no Node. Ray is an optional dependency (`shoal[ray]`), imported only here and
  only for this engine.

Both take the same isolation (`Isolation`): on Ray, every node applies it with its own local
executor, so every node must have the same work directory reachable by the task users, and
Ray must run as root there for tasks to run as their own users.

The engine choice (`Engine`, `EngineChoice`) is light, for `shoal up`'s signature, which
every `shoal` command reads; the executors load only when `start_engine` runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.api import Node
    from shoal.executors.contract import Executor
    from shoal.executors.local import Isolation
    from shoal.spec import SpecBundle

#: What `--ray-address` is when not given: the Ray cluster this machine belongs to.
RAY_AUTO = "auto"
DEFAULT_RAY_NAMESPACE = "shoal"


class Engine(StrEnum):
    LOCAL = "local"
    RAY = "ray"


class EngineError(Exception):
    """The engine cannot be used as asked (Ray missing or unreachable, no node): the
    message says what to do. `flag`: the option at fault, when one is."""

    def __init__(self, message: str, flag: str | None = None) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """The engine flags of `shoal up`."""

    engine: Engine = Engine.LOCAL
    ray_address: str = RAY_AUTO
    ray_namespace: str = DEFAULT_RAY_NAMESPACE

    def check(self, bundle: SpecBundle | None) -> None:
        """Refuse what cannot work before anything starts: declared nodes on Ray."""
        if self.engine is Engine.RAY and bundle is not None and bundle.nodes:
            names = ", ".join(n.name for n in bundle.nodes[:3])
            raise EngineError(f"--cluster declares Nodes ({names}), but --engine ray takes "
                              "its nodes from Ray: the file may give VirtualClusters and "
                              "PriorityClasses only", "--cluster")

    def describe(self, nodes: Sequence[Node]) -> str:
        """One line for the start-up banner."""
        if self.engine is Engine.LOCAL:
            return f"engine: local, {len(nodes)} node(s) on this machine"
        return (f"engine: ray at {self.ray_address} (namespace {self.ray_namespace}), "
                f"{len(nodes)} ready node(s): {', '.join(n.name for n in nodes)}")


#: The default: the local engine.
LOCAL = EngineChoice()


@dataclass(frozen=True, slots=True)
class Started:
    """An engine ready to run tasks, the nodes it starts with, and the host tasks reach the
    API at when it listens on every address."""

    executor: Executor
    nodes: tuple[Node, ...]
    api_host: str | None = None
    """The address of this machine that the engine's nodes reach; None: loopback."""


def start_engine(choice: EngineChoice, root: Path, bundle: SpecBundle | None, *,
                 grace: float, isolation: Isolation) -> Started:
    """The executor of the chosen engine over `root`, and its nodes."""
    if choice.engine is Engine.LOCAL:
        from shoal.executors.inventory import detect_local_node
        from shoal.executors.local import LocalExecutor

        nodes = tuple(bundle.nodes) if bundle is not None else (detect_local_node(),)
        executor = LocalExecutor(root, grace_period=grace, isolation=isolation,
                                 node_names=[node.name for node in nodes])
        return Started(executor, nodes)
    return _start_ray(choice, root, grace=grace, isolation=isolation)


def _start_ray(choice: EngineChoice, root: Path, *, grace: float, isolation: Isolation
               ) -> Started:
    try:
        engine = importlib.import_module("shoal.executors.ray_engine")
    except ImportError as exc:
        raise EngineError(f"--engine ray needs Ray ({exc}): install shoal[ray] "
                          "(pip install 'shoal[ray]', or uv sync --extra ray)",
                          "--engine") from None
    import ray  # installed: the engine imported it

    try:
        executor = engine.RayExecutor(root, address=choice.ray_address,
                                      namespace=choice.ray_namespace, grace_period=grace,
                                      isolation=isolation)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise EngineError(f"cannot connect to the Ray cluster at {choice.ray_address}: "
                          f"{exc}", "--ray-address") from None
    nodes = tuple(h.node for h in executor.nodes() if h.ready and h.node is not None)
    if not nodes:
        raise EngineError(f"the Ray cluster at {choice.ray_address} has no ready node",
                          "--ray-address")
    return Started(executor, nodes,
                   str(ray.util.get_node_ip_address()))  # type: ignore[no-untyped-call]
