"""A `shoal up` subprocess for the benchmarks: a temporary data directory, a free port, and a
client holding the admin token. Started as `python -m shoal` so that it also runs where the
`shoal` entry point is not installed (the GPU machine, with wheels on PYTHONPATH).
`server_process` finds it (its CPU time); `ray_cluster` starts a one-node Ray cluster that
offers what `CLUSTER`'s node does, for `shoal up --engine ray`.

As root, `shoal up` runs tasks as their own OS users, in `WORKDIR/work` (WORKDIR is made
traversable for them); not as root, it would refuse tasks, so a benchmark, whose commands are
its own, passes `--insecure-same-user` then."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

from shoal.client import wait_until_healthy
from shoal.executors.local import free_port

#: The one node of the API benchmarks' `--cluster` file: CPU and memory, no GPU.
CLUSTER = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: local}
spec:
  capacity: {cpu: 8, memory: 16Gi}
"""
#: What `CLUSTER`'s node offers, as Ray node resources.
CLUSTER_CPUS, CLUSTER_MEMORY = 8, 16 << 30


@contextmanager
def local_server(workdir: Path, *args: str, timeout: float = 60.0,
                 checkout: Path | None = None) -> Iterator[httpx.Client]:
    """Run `shoal up --data-dir WORKDIR/data ARGS…` until the block ends; yields an admin
    client. The server's stderr goes to WORKDIR/server.log. `checkout`: another checkout of
    Shoal whose code the server runs (in its directory, with its `.venv`'s interpreter
    where it has one), for a baseline measured in the same run."""
    python, cwd = sys.executable, None
    if checkout is not None:
        own = checkout / ".venv" / "bin" / "python"
        python, cwd = str(own) if own.exists() else sys.executable, str(checkout)
    data = workdir / "data"
    port = free_port()
    workdir.chmod(0o711)  # the tasks' users reach their directories under WORKDIR/work
    if os.geteuid() != 0 and "--insecure-same-user" not in args:
        args = (*args, "--insecure-same-user")
    log = (workdir / "server.log").open("ab")
    process = subprocess.Popen(
        [python, "-m", "shoal", "up", "--data-dir", str(data), "--port", str(port),
         "--work-dir", str(workdir / "work"), *args], stdout=subprocess.DEVNULL, stderr=log,
        cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url, timeout, lambda: process.poll() is None):
            log.flush()  # its tail in the message: WORKDIR is often a temporary directory
            raise SystemExit(f"shoal up did not answer within {timeout} s (exit code "
                             f"{process.poll()}): "
                             f"{(workdir / 'server.log').read_text()[-2000:]}")
        token = (data / "admin.token").read_text().strip()
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as client:
            yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()



def server_process(data_dir: Path) -> psutil.Process:
    """The `shoal up` process (a child of this one) serving `data_dir`."""
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if str(data_dir) in child.cmdline() and "up" in child.cmdline():
                return child
    raise SystemExit("could not find the shoal up process")


@contextmanager
def ray_cluster() -> Iterator[str]:
    """A one-node Ray cluster on this machine (`ray.cluster_utils`: its processes are this
    one's children) whose node Shoal names `local` and that offers `CLUSTER`'s CPUs and
    memory; yields its address (`shoal up --engine ray --ray-address`)."""
    try:  # the engine first: importing it turns Ray's `uv run` hook off before Ray loads
        from shoal.executors.ray_engine import NODE_LABEL
    except ImportError as exc:
        raise SystemExit(f"the Ray engine needs the `ray` extra ({exc}): "
                         f"uv sync --extra ray") from None
    from ray.cluster_utils import Cluster

    # No dashboard: Shoal's Ray engine needs none, and its fixed port (8265) may be another
    # Ray's on a shared machine (the test suite runs Ray clusters side by side).
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": CLUSTER_CPUS, "memory": CLUSTER_MEMORY, "labels": {NODE_LABEL: "local"},
        "include_dashboard": False})
    try:
        cluster.wait_for_nodes()  # `shoal up` refuses a cluster with no ready node yet
        yield str(cluster.address)
    finally:
        cluster.shutdown()  # type: ignore[no-untyped-call]
