"""Benchmark: what reading and specialising a multi-cluster job costs, against loading one
plain Shoal Job of the same shape (the baseline every submission already pays).

Builds an OpenPAI `super-2` job of `--roles` task roles naming `--clusters` members, each
role using `--params` parameters (whole-node and inline placeholders, one list value), then
times, as the median of `--rounds` rounds:

- `read_ms`: reading and checking the job (which makes every member's copy once);
- `specialise_per_copy_ms`: `specialise(job, alias)` (copy, OpenPAI check, roles) per member;
- `shoal_copy_ms`: the same for the job in Shoal's form, whose copy is loaded by the loader;
- `load_job_ms`: `load_text` of one plain Shoal Job of `--roles` task groups, the baseline.

Each time is printed as wall milliseconds and as this process's CPU milliseconds
(`…_cpu_ms`), with `specialise_cpu_ratio_to_load_job`: a copy's CPU time over the baseline's.

    uv run python bench/multicluster_spec.py [--clusters 32] [--roles 8] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml

from shoal.spec import load_text
from shoal.spec.multicluster_read import read_multicluster_text
from shoal.spec.specialise import specialise


def super2(clusters: int, roles: int, params: int) -> str:
    aliases = [f"c{i}" for i in range(clusters)]
    values: dict[str, Any] = {f"p{k}": {a: i + k for i, a in enumerate(aliases)}
                              for k in range(params)}
    values["stores"] = {a: [f"{a}-s{j}" for j in range(3)] for a in aliases}
    roles_doc = {f"r{r}": {
        "instances": 2, "dockerImage": "img",
        "resourcePerInstance": {"gpu": "<% $mcc.p0 %>", "cpu": 4, "memoryMB": 8192},
        "commands": [" ".join(f"--a{k}=<% $mcc.p{k} %>" for k in range(params))]}
        for r in range(roles)}
    return yaml.safe_dump({
        "protocolVersion": "super-2", "name": "bench", "type": "job",
        "secrets": {f"token-{a}": f"t-{a}" for a in aliases},
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"}],
        "taskRoles": roles_doc,
        "extras": {"com.microsoft.pai.runtimeplugin": [
            {"plugin": "teamwise_storage",
             "parameters": {"storageConfigNames": "<% $mcc.stores %>"}},
            {"plugin": "super_scheduler", "parameters": {
                "clusters": {a: {"uri": f"http://{a}"} for a in aliases},
                "params": values}}]}}, sort_keys=False)


def shoal_form(clusters: int, roles: int) -> str:
    aliases = [f"c{i}" for i in range(clusters)]
    return yaml.safe_dump({
        "apiVersion": "shoal/v1", "kind": "MultiClusterJob", "metadata": {"name": "bench"},
        "spec": {"clusters": {a: {"uri": f"http://{a}"} for a in aliases},
                 "params": {"gpus": {a: 1 + i % 8 for i, a in enumerate(aliases)}},
                 "template": {"taskGroups": [
                     {"name": f"g{r}", "replicas": 2,
                      "resources": {"cpu": 4, "memory": "8Gi", "gpu": "<% $mcc.gpus %>"},
                      "command": ["python", "train.py", "--gpus=<% $mcc.gpus %>"]}
                     for r in range(roles)]}}}, sort_keys=False)


def plain_job(roles: int) -> str:
    return yaml.safe_dump({
        "apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": "bench"},
        "spec": {"taskGroups": [
            {"name": f"g{r}", "replicas": 2, "resources": {"cpu": 4, "memory": "8Gi", "gpu": 1},
             "command": ["python", "train.py", "--gpus=1"]} for r in range(roles)]}},
        sort_keys=False)


def timed(action: Callable[[], object], rounds: int, per: int = 1) -> tuple[float, float]:
    """Median wall and CPU milliseconds of `action`, divided by `per`."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append((time.perf_counter() - wall) * 1000 / per)
        cpus.append((time.process_time() - cpu) * 1000 / per)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=32)
    parser.add_argument("--roles", type=int, default=8)
    parser.add_argument("--params", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    text = super2(args.clusters, args.roles, args.params)
    job = read_multicluster_text(text)
    shoal_job = read_multicluster_text(shoal_form(args.clusters, args.roles))
    plain = plain_job(args.roles)
    read = timed(lambda: read_multicluster_text(text), args.rounds)
    copies = timed(lambda: [specialise(job, a) for a in job.aliases], args.rounds,
                   len(job.aliases))
    shoal_copies = timed(lambda: [specialise(shoal_job, a) for a in shoal_job.aliases],
                         args.rounds, len(shoal_job.aliases))
    baseline = timed(lambda: load_text(plain), args.rounds)
    print(json.dumps({
        "clusters": args.clusters, "roles": args.roles, "params": args.params,
        "document_bytes": len(text.encode()),
        "read_ms": round(read[0], 3), "read_cpu_ms": round(read[1], 3),
        "specialise_per_copy_ms": round(copies[0], 3),
        "specialise_per_copy_cpu_ms": round(copies[1], 3),
        "shoal_copy_ms": round(shoal_copies[0], 3),
        "shoal_copy_cpu_ms": round(shoal_copies[1], 3),
        "load_job_ms": round(baseline[0], 3), "load_job_cpu_ms": round(baseline[1], 3),
        "specialise_cpu_ratio_to_load_job": round(copies[1] / baseline[1], 3),
        "shoal_copy_cpu_ratio_to_load_job": round(shoal_copies[1] / baseline[1], 3),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
