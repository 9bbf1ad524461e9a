"""The Pollux workloads (`../shared/traces/pollux/workloads/workload-N.csv`, OSDI'21 artifact):
`name,time,application,num_replicas,batch_size`, 16 nodes × 4 GPUs.

Each row is a job submitted at `time` seconds, training `application` at global batch size
`batch_size` on `num_replicas` GPUs — what the artifact's rigid baselines (Tiresias,
Optimus) run it at. It becomes a gang of `num_replicas` one-GPU tasks (4 CPUs and 16 GiB
each) whose work is its run time on that many packed replicas under the application model
(`shoal.sim.pollux`), and whose speed-up curve — for a job that runs on fewer — is the
model's (keyed `<application>@<batch_size>` in the returned `WorkModel`).

With `elastic=True` every job is elastic from 1 replica to `num_replicas` (any size, no
cooldown): Shoal's `elastic` profile starts it on what is free and grows it. With
`adaptive=True` every job adapts its batch size to the replicas it runs on, as AdaptDL jobs
do under Pollux (`Application.adaptive_run_time`; its `batch_size` is then unused): its work
is its run time on `num_replicas` replicas at the best batch size for them, and its curve is
keyed `<application>+`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shoal.api import Elasticity, Resources
from shoal.sim.loaders._common import finish
from shoal.sim.loaders._csv import count, job_name, number, read_table
from shoal.sim.pollux import Application
from shoal.sim.trace import (
    DEFAULT_CPU_PER_GPU,
    DEFAULT_MEMORY_PER_GPU,
    WORKER_GROUP,
    Trace,
    TraceError,
    TraceJob,
)
from shoal.sim.work import SpeedupCurve, WorkModel

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
#: One replica: one GPU with the gang shape rule's CPUs and memory.
REPLICA = Resources.of(cpu=DEFAULT_CPU_PER_GPU, memory=DEFAULT_MEMORY_PER_GPU, gpu=1)


def load_pollux(path: str | os.PathLike[str], applications: Mapping[str, Application], *,
                elastic: bool = False, adaptive: bool = False, limit: int | None = None
                ) -> tuple[Trace, WorkModel]:
    """The workload's jobs (the first `limit`), and the work model that gives each its
    application's speed-up."""
    table = read_table(path, COLUMNS)
    source = table.source
    col = {name: table.columns[name] for name in COLUMNS}
    jobs: list[TraceJob] = []
    curves: dict[str, SpeedupCurve] = {}
    for line, row in table.rows:
        name = job_name(source, line, "name", row[col["name"]])
        at = number(source, line, "time", row[col["time"]])
        app_name = row[col["application"]].strip()
        app = applications.get(app_name)
        if app is None:
            raise TraceError(source, line, "application",
                             f"unknown application {app_name!r}; expected one of "
                             f"{', '.join(sorted(applications))}")
        replicas = count(source, line, "num_replicas", row[col["num_replicas"]], minimum=1)
        batch = count(source, line, "batch_size", row[col["batch_size"]], minimum=1)
        if batch not in app.iterations:
            raise TraceError(source, line, "batch_size",
                             f"{app_name} was not validated at batch size {batch} "
                             f"(validated: {', '.join(map(str, sorted(app.iterations)))})")
        if replicas > app.max_replicas(batch):
            raise TraceError(source, line, "num_replicas",
                             f"{replicas} replicas would give each fewer than {app.min_local:g} "
                             f"of the batch of {batch}, the least {app_name} was measured at")
        if adaptive:
            key, work = f"{app_name}+", app.adaptive_run_time(replicas)
            if key not in curves:
                curves[key] = app.adaptive_speedup(max(map(app.max_replicas, app.iterations)))
        else:
            key, work = f"{app_name}@{batch}", app.run_time(replicas, batch)
            if key not in curves:
                curves[key] = app.speedup(batch, app.max_replicas(batch))
        jobs.append(TraceJob(
            name, at, work, replicas, REPLICA, model=key,
            elastic=Elasticity(WORKER_GROUP, 1, replicas) if elastic else None))
    return finish(jobs, source, limit), WorkModel(per_model=curves)
