"""The engines the contract tests run against: the local executor, and the Ray engine over
one real multi-node Ray cluster that a test module starts on this machine (`RayNodes`) and
shuts down at its end. A module builds its table with `engines`, and keeps the `RayNodes`
in a module-scoped fixture so the cluster is shared by the module's tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ray_support import RayNodes, namespace_of

from shoal.executors.contract import Executor
from shoal.executors.local import LocalExecutor

LOCAL_NODES = ("node-a", "node-b")


@dataclass(frozen=True)
class Engine:
    name: str
    nodes: tuple[str, ...]
    """The nodes an instance has."""
    start: Callable[[Path], Executor]
    """A new instance over `root` (the same root: the same engine after a restart)."""
    cleanup: Callable[[Path], None] = lambda root: None
    """Ends what a test left running on the engine (its instances over `root`)."""


def engines(ray: RayNodes, ray_nodes: tuple[str, ...], grace: float) -> dict[str, Engine]:
    """The local engine and the Ray engine over `ray`'s cluster (started by the first Ray
    test that asks for an instance), by name."""

    def local(root: Path) -> Executor:
        return LocalExecutor(root, grace_period=grace, node_names=LOCAL_NODES)

    def local_python(root: Path) -> Executor:
        # The wrapper forked from the launcher's Python, where the machine could build
        # the compiled one (`shoal.executors.native`): the same contract, both held to it.
        return LocalExecutor(root, grace_period=grace, node_names=LOCAL_NODES,
                             compiled=False)

    def ray_engine(root: Path) -> Executor:
        from shoal.executors.ray_engine import RayExecutor

        ray.cluster  # noqa: B018 - started by the first Ray test
        return RayExecutor(root, namespace=namespace_of(root), grace_period=grace)

    def ray_cleanup(root: Path) -> None:
        from shoal.executors.ray_engine import RayExecutor

        if ray.started:
            RayExecutor(root, namespace=namespace_of(root), grace_period=grace).close()

    return {"local": Engine("local", LOCAL_NODES, local),
            "local-python": Engine("local-python", LOCAL_NODES, local_python),
            "ray": Engine("ray", ray_nodes, ray_engine, ray_cleanup)}
