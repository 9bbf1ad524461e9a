"""Benchmark: what one Prometheus scrape (`GET /metrics`) costs on a large cluster, in-process.

Builds the app over a migrated SQLite store holding `--nodes` nodes (8 GPUs each) and
`--queues` virtual clusters (each guaranteed 8 GPUs), and a scheduler model of the same
cluster with one running two-GPU job per virtual cluster and one waiting (what the control
loop would answer `virtual_cluster_status` with). Then times, as the median of `--rounds`
scrapes: `scrape_ms` (the whole request, exposition included), `status_ms` (the model's
virtual-cluster status alone: in `shoal up` that part runs on the control loop's thread),
`scrape_bytes` and `series`. The baseline is the same scrape of a cluster of one node and
one virtual cluster, in the same process: `scrape_cpu_ratio_to_small`.

Prints one JSON object: wall milliseconds (`…_ms`) and this process's CPU milliseconds
(`…_cpu_ms`).

    uv run python bench/metrics.py [--nodes 10000] [--queues 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from shoal.api import (
    Job,
    Node,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.scheduler.introspection import VirtualClusterStatus, virtual_cluster_status
from shoal.scheduler.model import SchedulerModel
from shoal.server import create_app
from shoal.store import Repository, open_store

GPU_NODE = Resources.of(cpu=64_000, memory=512 * 1024, gpu=8)
TWO_GPUS = Resources.of(cpu=2000, memory=8192, gpu=2)


class ModelStatus:
    """The one scheduler call a scrape makes, answered from a model built here."""

    def __init__(self, model: SchedulerModel) -> None:
        self.model = model

    def virtual_cluster_status(self) -> Mapping[str, VirtualClusterStatus]:
        return virtual_cluster_status(self.model)

    def reload_catalog(self) -> None:  # the app wires it to routes this bench never calls
        pass


def cluster(nodes: int, queues: int) -> tuple[list[Node], list[VirtualCluster], list[Job]]:
    node_list = [Node(f"gpu-{i:05d}", GPU_NODE) for i in range(nodes)]
    vcs = [VirtualCluster(f"team-{q:04d}", min=Resources.of(gpu=8)) for q in range(queues)]
    jobs = []
    for q in range(queues):
        running = Task(f"run-{q}", "w", 0, TaskState.RUNNING, node=node_list[q % nodes].name,
                       gpus=(0, 1), started=0.0)
        jobs.append(Job(f"run-{q}", (TaskGroup("w", 1, TWO_GPUS),), queue=vcs[q].name,
                        scheduler_name=SchedulerName.DEFAULT, submitted=0.0, tasks=(running,)))
        jobs.append(Job(f"wait-{q}", (TaskGroup("w", 4, TWO_GPUS),), queue=vcs[q].name,
                        scheduler_name=SchedulerName.DEFAULT, submitted=1.0))
    return node_list, vcs, jobs


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, float, Any]:
    """Median wall and CPU milliseconds of `rounds` calls, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus), result


def measure(root: Path, nodes: int, queues: int, rounds: int) -> dict[str, float]:
    node_list, vcs, jobs = cluster(nodes, queues)
    store = open_store(f"sqlite:///{root / 'shoal.db'}")
    store.migrate()
    repository = Repository(store)
    repository.create_user("prometheus")
    token = repository.issue_token("prometheus")
    for node in node_list:
        repository.put_node(node)
    for vc in vcs:
        repository.put_virtual_cluster(vc)
    model = SchedulerModel(node_list, vcs)
    model.add_jobs(jobs)
    scheduler = ModelStatus(model)
    app = create_app(repository, scheduler)  # type: ignore[arg-type]
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        def scrape() -> str:
            answer = client.get("/metrics", headers=headers)
            assert answer.status_code == 200, answer.text
            return answer.text
        scrape()  # warm: the node catalog cache, the first connection
        wall, cpu, text = timed(scrape, rounds)
        status_wall, status_cpu, _ = timed(scheduler.virtual_cluster_status, rounds)
    series = sum(len(f.samples) for f in text_string_to_metric_families(text))
    store.close()
    return {"scrape_ms": wall, "scrape_cpu_ms": cpu, "status_ms": status_wall,
            "status_cpu_ms": status_cpu, "scrape_bytes": len(text.encode()), "series": series}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--queues", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = measure(Path(tmp) / "small", 1, 1, args.rounds)
        large = measure(Path(tmp) / "large", args.nodes, args.queues, args.rounds)
    out: dict[str, float | int] = {"nodes": args.nodes, "queues": args.queues,
                                   **large,
                                   "small_scrape_cpu_ms": small["scrape_cpu_ms"],
                                   "scrape_cpu_ratio_to_small":
                                       large["scrape_cpu_ms"] / max(small["scrape_cpu_ms"],
                                                                    1e-9)}
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                      for k, v in out.items()}))


if __name__ == "__main__":
    main()
