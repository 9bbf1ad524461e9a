"""Benchmark: what a large job costs the API, in-process (no HTTP server, no control loop).

Builds the app over a migrated SQLite store and a `ControlPlane` that is never started (its
admission check and its store writes are the request's work; admitting the job into the
loop's model happens later, on the loop's thread), on a cluster big enough to hold the job
(`--nodes` nodes of 128 CPUs). Then times, as the median of `--rounds` rounds:

- `submit_ms`: `POST /api/v1/jobs` of one job of `--tasks` one-CPU tasks in one group,
  response included; `submit_one_task_ms` the same for a job of one task, the baseline of
  `submit_cpu_ratio_to_one_task` (CPU time of the large submission over the small one: a
  submission's work is O(task groups), so it stays small);
- `list_ms` / `list_bytes`: `GET /api/v1/jobs?limit=10` with such jobs stored;
- `get_ms` / `get_bytes`: `GET /api/v1/jobs/{name}` of one of them;
- `tasks_page_ms`: `GET /api/v1/jobs/{name}/tasks?limit=500`, the first page;
- `delete_ms`: `DELETE /api/v1/jobs/{name}` of one (cancelled, then removed with its rows);
- with `--jobs N` small jobs stored (straight into the store): `many_first_page_ms`,
  `many_deep_page_ms` (`after` the 100th-last), `many_state_page_ms` (`state=Pending`, from
  the middle) — pages of 50 — and `many_get_ms`.

Prints one JSON object: each time as wall milliseconds (`…_ms`) and as this process's CPU
milliseconds (`…_cpu_ms`: the app runs in-process, so that is the request's work).

    uv run python bench/admission.py [--tasks 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from shoal.api import Job, Node, Resources, TaskGroup
from shoal.control import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.server import create_app
from shoal.store import Repository, open_store

JOB = """\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: default
  taskGroups:
    - name: worker
      replicas: {tasks}
      resources: {{cpu: 1, memory: 64Mi}}
      command: [sleep, "1"]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000)
    args = parser.parse_args()
    nodes = [Node(f"n{i}", Resources.of(cpu=128_000, memory=1 << 20))
             for i in range(-(-args.tasks // 128))]
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'shoal.db'}")
        store.migrate()
        repository = Repository(store)
        for node in nodes:
            repository.put_node(node)
        repository.create_user("root", admin=True)
        token = repository.issue_token("root")
        plane = ControlPlane(repository, LocalExecutor(Path(tmp) / "executor"), nodes,
                             Profile.default())
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/yaml"}
        times: dict[str, list[float]] = {k: [] for k in (
            "submit_one_task_ms", "submit_ms", "list_ms", "get_ms", "tasks_page_ms", "delete_ms",
            "many_first_page_ms", "many_deep_page_ms", "many_state_page_ms", "many_get_ms")}
        cpu: dict[str, list[float]] = {k: [] for k in times}
        sizes: dict[str, int] = {}
        with TestClient(create_app(repository, plane)) as client:
            def timed(key: str, method: str, url: str, **kwargs: object) -> int:
                started, cpu_started = time.perf_counter(), time.process_time()
                response = client.request(method, url, headers=headers, **kwargs)  # type: ignore[arg-type]
                times[key].append((time.perf_counter() - started) * 1000)
                cpu[key].append((time.process_time() - cpu_started) * 1000)
                if response.status_code >= 300:
                    raise SystemExit(f"{method} {url}: {response.status_code} "
                                     f"{response.text[:300]}")
                return len(response.content)
            for i in range(args.rounds):
                timed("submit_one_task_ms", "POST", "/api/v1/jobs",
                      content=JOB.format(name=f"small-{i}", tasks=1))
                name = f"big-{i}"
                timed("submit_ms", "POST", "/api/v1/jobs",
                      content=JOB.format(name=name, tasks=args.tasks))
                sizes["list_bytes"] = timed("list_ms", "GET", "/api/v1/jobs?limit=10")
                sizes["get_bytes"] = timed("get_ms", "GET", f"/api/v1/jobs/{name}")
                timed("tasks_page_ms", "GET", f"/api/v1/jobs/{name}/tasks?limit=500")
            for i in range(args.rounds):
                timed("delete_ms", "DELETE", f"/api/v1/jobs/big-{i}")
            for i in range(args.jobs):
                repository.submit_job(Job(f"j{i:06d}", (TaskGroup(
                    "w", 4, Resources.of(cpu=100), command=("true",)),), user="root",
                    submitted=float(i)))
            if args.jobs:
                last, middle = f"j{args.jobs - 100:06d}", f"j{args.jobs // 2:06d}"
                for _ in range(args.rounds):
                    timed("many_first_page_ms", "GET", "/api/v1/jobs?limit=50")
                    timed("many_deep_page_ms", "GET", f"/api/v1/jobs?limit=50&after={last}")
                    timed("many_state_page_ms", "GET",
                          f"/api/v1/jobs?limit=50&state=Pending&after={middle}")
                    timed("many_get_ms", "GET", f"/api/v1/jobs/{middle}")
        store.close()
    medians = {k: round(statistics.median(v), 1) for k, v in times.items() if v}
    cpu_medians = {k.removesuffix("_ms") + "_cpu_ms": round(statistics.median(v), 1)
                   for k, v in cpu.items() if v}
    ratio = cpu_medians["submit_cpu_ms"] / max(cpu_medians["submit_one_task_cpu_ms"], 0.1)
    print(json.dumps({"tasks": args.tasks, "jobs": args.jobs, **medians, **cpu_medians,
                      "submit_cpu_ratio_to_one_task": round(ratio, 1), **sizes}))


if __name__ == "__main__":
    main()
