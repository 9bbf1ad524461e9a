"""A real multi-node Ray cluster on this machine, for the tests that run Shoal on Ray.

`RayNodes` starts a `ray.cluster_utils.Cluster` lazily (the first test of a module that
needs it), names every node for Shoal by the `shoal.io/node` label, and shuts everything
down when the module's fixture ends. Fake GPUs are declared as node resources
(`num_gpus`): Shoal assigns their indices itself. One cluster serves a whole module; each
control plane gets a Ray namespace of its own (`namespace_of(root)`), since tests reuse
job names. Nodes may be added and removed while a test runs (`add`, `remove`), as a
machine joins or dies.

Ray gives a node it starts 30 s to register with its GCS (hard-coded in
`ray._private.node.Node`), then raises "timed out during startup". On a loaded machine — the
suite's xdist workers each starting a cluster beside other work — a start can take longer:
the clusters of one checkout start one at a time (`_one_starting`, a lock across the
workers), and a cluster whose start timed out is shut down and started again.

    @pytest.fixture(scope="module")
    def ray_nodes() -> Iterator[RayNodes]:
        with RayNodes({"ray-head": {"num_cpus": 1}, "ray-gpu": {"num_gpus": 4}}) as nodes:
            yield nodes
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

#: How Ray's GCS checks its nodes: every second instead of every 3 s, so that a node whose
#: raylet was killed (`remove`) is declared dead after 5 failed checks in ~5 s, not ~15 s.
#: A check still fails only when its RPC errs or gets no answer in 10 s (Ray's default
#: timeout), so a node that is alive but slow on a loaded machine is not declared dead.
HEALTH_CHECKS = {"health_check_period_ms": 1000, "health_check_failure_threshold": 5,
                 "health_check_timeout_ms": 10000}


#: How many times a cluster is started before its start's error is the test's.
START_ATTEMPTS = 3


@contextlib.contextmanager
def _one_starting() -> Iterator[None]:
    """Held while a cluster or a node starts: one at a time among the processes running this
    checkout's tests (the lock is this module's own file, so nothing is left behind)."""
    with open(__file__, "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _timed_out(error: Exception) -> bool:
    return "timed out during startup" in str(error)


def namespace_of(root: Path) -> str:
    """The Ray namespace of the control plane whose executor root is `root`."""
    return "shoal-test-" + hashlib.sha256(str(root.absolute()).encode()).hexdigest()[:12]


def node_label() -> str:
    # The engine first: importing it turns Ray's `uv run` hook off before Ray is imported.
    return str(importlib.import_module("shoal.executors.ray_engine").NODE_LABEL)


class RayNodes:
    """A Ray cluster whose nodes are named for Shoal; the first named node is the head.
    `nodes` maps a Shoal node name to `Cluster.add_node` arguments (`num_cpus`,
    `num_gpus`, `resources`, `labels`...); every node gets one CPU unless told."""

    def __init__(self, nodes: Mapping[str, Mapping[str, Any]]) -> None:
        if not nodes:
            raise ValueError("a Ray cluster needs a head node")
        self._wanted = {name: dict(args) for name, args in nodes.items()}
        self._cluster: Any = None
        self._handles: dict[str, Any] = {}

    @property
    def started(self) -> bool:
        return self._cluster is not None

    @property
    def address(self) -> str:
        """The cluster's GCS address (`ray.init(address=...)`, `--ray-address`)."""
        return str(self.cluster.address)

    @property
    def cluster(self) -> Any:
        """The started `ray.cluster_utils.Cluster` (started on first use), with this
        process connected to it as a driver."""
        if self._cluster is None:
            self._start()
        return self._cluster

    def _args(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        label = node_label()
        # One CPU per GPU at least: the default profile's gpu-discipline asks GPU tasks for
        # one CPU per GPU, so a GPU node with fewer could never host them.
        merged: dict[str, Any] = {"num_cpus": max(1, int(args.get("num_gpus", 0))), **args}
        merged["labels"] = {**dict(args.get("labels") or {}), label: name}
        return merged

    def _start(self) -> None:
        node_label()  # the engine before Ray: it turns Ray's `uv run` hook off
        import ray
        from ray.cluster_utils import Cluster

        (head, head_args), *workers = self._wanted.items()
        # No dashboard: `ray[default]` (the Ray member's Jobs API) would start one per head,
        # a few hundred MB and a CPU share the engine's tests never use.
        head_node = {**self._args(head, head_args), "include_dashboard": False,
                     "_system_config": {**HEALTH_CHECKS,
                                        **dict(head_args.get("_system_config") or {})}}
        for attempt in range(1, START_ATTEMPTS + 1):
            cluster = Cluster()
            try:
                with _one_starting():
                    cluster.add_node(**head_node)
                    self._handles[head] = cluster.head_node
                    for name, args in workers:
                        self._handles[name] = cluster.add_node(**self._args(name, args))
                    cluster.wait_for_nodes()
            except Exception as error:
                cluster.shutdown()  # what did start (a head started without its node too)
                self._handles.clear()
                if not _timed_out(error) or attempt == START_ATTEMPTS:
                    raise
                continue
            self._cluster = cluster
            break
        if not ray.is_initialized():
            ray.init(address=self._cluster.address, log_to_driver=False)

    def add(self, name: str, **args: Any) -> None:
        """A node joins the cluster (it is alive once this returns)."""
        with _one_starting():
            self._handles[name] = self.cluster.add_node(**self._args(name, args))
            self.cluster.wait_for_nodes()

    def remove(self, name: str) -> None:
        """A node dies (its raylet and every process on it are killed)."""
        self.cluster.remove_node(self._handles.pop(name), allow_graceful=False)

    def shutdown(self) -> None:
        if self._cluster is None:
            return
        import ray

        ray.shutdown()
        self._cluster.shutdown()
        self._cluster = None
        self._handles.clear()

    def __enter__(self) -> RayNodes:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.shutdown()
