"""Prometheus metrics: `GET /metrics` in the text exposition format, and the series behind it.

`ShoalMetrics` owns one `CollectorRegistry` (its own, not prometheus-client's global one, so
that several apps in one process never share or collide). It is two things:

- the control loop's observer (`shoal.control.metrics_hooks.ControlObserver`): counters and
  histograms of cycles, placements, starts, evictions, launches, process ends and retries,
  updated as the loop works;
- a collector read at scrape time (`_StateCollector`): every declared virtual cluster's
  guaranteed / ceiling / used / borrowed / available / waiting resources, as the scheduler's
  model has them now (`Scheduler.virtual_cluster_status`); stored jobs by state (one
  grouped count); each node's condition.

And it times the store's transactions (SQLAlchemy connection events: from BEGIN, waiting for
SQLite's write lock included, to COMMIT or ROLLBACK).

Names follow Prometheus' conventions: `shoal_` first, counters end in `_total`, durations
are in seconds, and resources in base units — CPU in cores, memory in bytes, GPUs and other
resources in units. Label values come from bounded sets only: virtual cluster names (declared
ones: a job's own virtual cluster counts in the declared one above it), node names, states,
kinds and reasons from fixed lists. Never a job's name or a user's text.

Who may scrape (`MetricsAccess`): anyone with a valid Shoal token, or the scrape token of
`shoal up --metrics-token-file`; with `--metrics-open`, anyone.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from sqlalchemy import Engine, event

from shoal.api import JobState
from shoal.api.objects import job_of_virtual_cluster
from shoal.api.resources import CORE_DIMENSIONS, CPU, MEMORY, ResourceLimit, Resources
from shoal.control.metrics_hooks import (
    CycleReport,
    ExitClass,
    LaunchOutcome,
    RetryKind,
    TaskEnd,
)
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.auth import UNAUTHENTICATED, bearer
from shoal.server.errors import ApiError
from shoal.store import Repository
from shoal.store.engine import READ_ONLY
from shoal.store.metrics_reads import job_counts

log = logging.getLogger(__name__)

#: Seconds from a submission to a placement or a start: from instant to a day's wait.
WAIT_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0,
                7200.0, 21600.0, 86400.0)
#: A cycle's deciding time: a small cluster's take well under a millisecond.
CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 5.0, 10.0)
DECISION_BUCKETS = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 5000.0)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 10.0)
#: What a transaction's start time is kept under, in its connection's `info`.
_BEGUN = "shoal_metrics_begun"
_UNITS = "CPU in cores, memory in bytes, GPUs and other resources in units"


def base_units(resources: Resources | ResourceLimit) -> dict[str, float]:
    """A vector in base units, by resource; the core dimensions always (a limit: those it
    sets), extras where named."""
    amounts = resources.to_dict()
    names = [*CORE_DIMENSIONS, *sorted(set(amounts) - set(CORE_DIMENSIONS))]
    out: dict[str, float] = {}
    for name in names:
        if isinstance(resources, ResourceLimit) and name not in amounts:
            continue
        value = float(amounts.get(name, 0))
        out[name] = value / 1000 if name == CPU else value * 2**20 if name == MEMORY else value
    return out


@dataclass(frozen=True)
class MetricsAccess:
    """Who may read `/metrics`: `open`, anyone; else a valid Shoal token or `token`, the
    scrape token of `shoal up --metrics-token-file`."""

    open: bool = False
    token: str | None = None


class ShoalMetrics:
    """The series of one Shoal server and the registry they are exposed from."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.cycle_seconds = Histogram(
            "shoal_cycle_duration_seconds", "How long a scheduling cycle took to decide "
            "(launches not included).", buckets=CYCLE_BUCKETS, registry=r)
        self.cycle_decisions = Histogram(
            "shoal_cycle_decisions", "How many decisions (binds, evictions, resizes, "
            "reservations) one cycle made.", buckets=DECISION_BUCKETS, registry=r)
        self.decisions = Counter(
            "shoal_decisions", "Decisions made by scheduling cycles, by kind.", ["kind"],
            registry=r)
        self.skipped = Counter(
            "shoal_cycles_skipped", "Event cycles skipped because they were proven moot "
            "(nothing could be placed).", registry=r)
        self.queueing = Histogram(
            "shoal_task_queueing_delay_seconds", "From a job's submission to the first "
            "placement of each of its tasks.", buckets=WAIT_BUCKETS, registry=r)
        self.to_running = Histogram(
            "shoal_task_submit_to_running_seconds", "From a job's submission to each of its "
            "tasks first recorded running.", buckets=WAIT_BUCKETS, registry=r)
        self.evictions = Counter(
            "shoal_evictions", "Tasks evicted by the scheduler, by why (preempted, "
            "reclaimed, elastic_surplus, shrunk, service_resized, other) and by the virtual "
            "cluster charged for them.", ["reason", "virtual_cluster"], registry=r)
        self.launches = Counter(
            "shoal_task_launches", "Task launches, by outcome (failed: the engine could "
            "not start it, or its launch could not even be built).",
            ["outcome"], registry=r)
        self.exits = Counter(
            "shoal_task_exits", "Task processes that ended, by exit code class (0, 1-127, "
            "signal: killed or 128 and above, lost).", ["code_class"], registry=r)
        self.retries = Counter(
            "shoal_task_retries", "Retries: a task in place, a gang restarted, a job put "
            "back whole.", ["kind"], registry=r)
        self.resource_seconds = Counter(
            "shoal_task_resource_seconds", "Resources held by tasks whose processes ended, "
            f"times how long they held them ({_UNITS}: core-seconds, byte-seconds, "
            "GPU-seconds).", ["virtual_cluster", "resource"], registry=r)
        self.store_seconds = Histogram(
            "shoal_store_transaction_seconds", "Store transactions, from BEGIN (waiting for "
            "a lock included) to COMMIT or ROLLBACK.", ["mode", "outcome"],
            buckets=STORE_BUCKETS, registry=r)
        # Registered after what is read at scrape time (`watch_state`): a part that fails
        # is counted in the same scrape.
        self.scrape_errors = Counter(
            "shoal_metrics_scrape_errors", "Parts of a scrape that could not be read (the "
            "scheduler did not answer in time, the store failed).", ["part"], registry=None)
        for outcome in LaunchOutcome:
            self.launches.labels(outcome.value)
        for code in ExitClass:
            self.exits.labels(code.value)
        for kind in RetryKind:
            self.retries.labels(kind.value)
        for decision in ("bind", "evict", "resize", "reserve"):
            self.decisions.labels(decision)
        self._state: _StateCollector | None = None

    # ---- the control loop's observer ------------------------------------------------------

    def cycle(self, report: CycleReport) -> None:
        self.cycle_seconds.observe(report.seconds)
        self.cycle_decisions.observe(sum(report.decisions.values()))
        for kind, count in report.decisions.items():
            if count:
                self.decisions.labels(kind).inc(count)
        for (reason, where), count in report.evictions.items():
            self.evictions.labels(reason.value, where).inc(count)
        for delay in report.queueing_delays:
            self.queueing.observe(delay)

    def cycle_skipped(self) -> None:
        self.skipped.inc()

    def started(self, delay: float) -> None:
        self.to_running.observe(delay)

    def launched(self, outcome: LaunchOutcome, count: int) -> None:
        if count:
            self.launches.labels(outcome.value).inc(count)

    def task_ended(self, end: TaskEnd) -> None:
        self.exits.labels(end.exit.value).inc()
        if end.seconds > 0 and end.virtual_cluster:
            for name, amount in base_units(end.resources).items():
                if amount:
                    self.resource_seconds.labels(end.virtual_cluster, name).inc(
                        amount * end.seconds)

    def retried(self, kind: RetryKind) -> None:
        self.retries.labels(kind.value).inc()

    # ---- what is read at scrape time -------------------------------------------------------

    def watch_state(self, repository: Repository,
                    statuses: Callable[[], Mapping[str, VirtualClusterStatus]]) -> None:
        """Read virtual clusters, jobs and nodes at each scrape, and time `repository`'s
        store transactions. Once per registry."""
        if self._state is not None:
            raise RuntimeError("these metrics already watch a server")
        self._state = _StateCollector(repository, statuses, self.scrape_errors)
        self.registry.register(self._state)
        self.registry.register(self.scrape_errors)
        time_transactions(repository.store.engine, self.store_seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def time_transactions(engine: Engine, histogram: Histogram) -> None:
    """Observe every transaction of `engine` (and of its read-only variant) in `histogram`,
    by mode (read, write) and outcome (commit, rollback)."""

    # Inserted first: the clock starts before the store's own BEGIN waits for its lock.
    @event.listens_for(engine, "begin", insert=True)
    def _begin(connection: Any) -> None:
        connection.info[_BEGUN] = time.perf_counter()

    def ended(outcome: str) -> Callable[[Any], None]:
        def _end(connection: Any) -> None:
            begun = connection.info.pop(_BEGUN, None)
            if begun is not None:
                mode = "read" if connection.get_execution_options().get(READ_ONLY) \
                    else "write"
                histogram.labels(mode, outcome).observe(time.perf_counter() - begun)
        return _end

    event.listen(engine, "commit", ended("commit"))
    event.listen(engine, "rollback", ended("rollback"))


class _StateCollector(Collector):
    """What is true now, read at each scrape: virtual clusters, jobs by state, nodes."""

    def __init__(self, repository: Repository,
                 statuses: Callable[[], Mapping[str, VirtualClusterStatus]],
                 errors: Counter) -> None:
        self.repository = repository
        self.statuses = statuses
        self.errors = errors

    def describe(self) -> Iterable[Metric]:
        return ()  # read at scrape time only: registering must not ask the scheduler

    def collect(self) -> Iterator[Metric]:
        yield from self._part("virtual_clusters", self._virtual_clusters)
        yield from self._part("jobs", self._jobs)
        yield from self._part("nodes", self._nodes)

    def _part(self, name: str, read: Callable[[], Sequence[Metric]]) -> Sequence[Metric]:
        """One part of the scrape; one that fails is counted and left out, not the rest."""
        try:
            return read()
        except Exception as exc:  # a scrape must still answer
            log.warning("metrics: cannot read %s (%s)", name, exc)
            self.errors.labels(name).inc()
            return []

    def _virtual_clusters(self) -> Sequence[Metric]:
        labels = ["virtual_cluster", "resource"]

        def family(name: str, what: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"shoal_virtual_cluster_{name}", f"{what} ({_UNITS}).",
                                     labels=labels)

        vectors: dict[str, tuple[GaugeMetricFamily, Callable[[VirtualClusterStatus],
                                                             Resources | ResourceLimit]]] = {
            "guaranteed": (family("guaranteed", "What a virtual cluster is guaranteed: its "
                                  "min plus its fixed-size nodes; the root: the cluster"),
                           lambda s: s.guaranteed),
            "ceiling": (family("ceiling", "The most a virtual cluster may use, for the "
                               "resources its max limits"), lambda s: s.ceiling),
            "used": (family("used", "What the tasks of a virtual cluster's subtree hold"),
                     lambda s: s.used),
            "borrowed": (family("borrowed", "What a virtual cluster uses beyond its "
                                "guarantee"), lambda s: s.borrowed),
            "available": (family("available", "What a virtual cluster's subtree could "
                                 "still take now"), lambda s: s.available),
            "waiting": (family("waiting", "What a virtual cluster's own pending tasks ask "
                               "for"), lambda s: s.waiting),
        }
        counts = {
            "pending_jobs": GaugeMetricFamily(
                "shoal_virtual_cluster_pending_jobs", "A virtual cluster's own jobs with "
                "tasks still to place.", labels=["virtual_cluster"]),
            "running_jobs": GaugeMetricFamily(
                "shoal_virtual_cluster_running_jobs", "A virtual cluster's own jobs with "
                "tasks placed.", labels=["virtual_cluster"]),
            "running_tasks": GaugeMetricFamily(
                "shoal_virtual_cluster_running_tasks", "A virtual cluster's own tasks that "
                "hold resources.", labels=["virtual_cluster"]),
        }
        for name, status in sorted(self.statuses().items()):
            if job_of_virtual_cluster(name) is not None:
                continue  # named after a job: counted in the declared cluster above it
            for metric, of in vectors.values():
                for resource, amount in base_units(of(status)).items():
                    metric.add_metric([name, resource], amount)
            counts["pending_jobs"].add_metric([name], status.pending_jobs)
            counts["running_jobs"].add_metric([name], status.running_jobs)
            counts["running_tasks"].add_metric([name], status.running_tasks)
        return [metric for metric, _ in vectors.values()] + list(counts.values())

    def _jobs(self) -> Sequence[Metric]:
        counts = job_counts(self.repository.store)
        jobs = GaugeMetricFamily("shoal_jobs", "Stored jobs by state.", labels=["state"])
        for state in JobState:
            jobs.add_metric([state.value], counts.get(state, 0))
        return [jobs]

    def _nodes(self) -> Sequence[Metric]:
        ready = GaugeMetricFamily("shoal_node_ready", "1 while a node's engine reports it "
                                  "ready (Ready), 0 when not (NotReady).", labels=["node"])
        schedulable = GaugeMetricFamily("shoal_node_schedulable", "1 while a node is "
                                        "declared schedulable, 0 when cordoned.",
                                        labels=["node"])
        phases = GaugeMetricFamily("shoal_nodes", "Nodes by phase (Ready, NotReady, "
                                   "Cordoned).", labels=["phase"])
        by_phase: dict[str, int] = {}
        for record in self.repository.node_records():
            name = record.node.name
            ready.add_metric([name], 1.0 if record.condition.ready else 0.0)
            schedulable.add_metric([name], 1.0 if record.node.schedulable else 0.0)
            by_phase[record.phase.value] = by_phase.get(record.phase.value, 0) + 1
        for phase in ("Ready", "NotReady", "Cordoned"):
            phases.add_metric([phase], by_phase.get(phase, 0))
        return [ready, schedulable, phases]


def install_metrics(app: FastAPI, repository: Repository, metrics: ShoalMetrics,
                    access: MetricsAccess) -> None:
    """Serve `GET /metrics` (outside the OpenAPI document: it is not part of the API)."""

    async def allowed(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                             Depends(bearer)]) -> None:
        if access.open:
            return
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise ApiError(401, "missing bearer token: /metrics takes a Shoal token or the "
                                "scrape token", "header.Authorization",
                           headers=UNAUTHENTICATED)
        token = credentials.credentials
        if access.token is not None and hmac.compare_digest(token.encode(),
                                                            access.token.encode()):
            return
        if repository.authenticate(token) is None:
            raise ApiError(401, "invalid or revoked token", "header.Authorization",
                           headers=UNAUTHENTICATED)

    # Sync: reading the scheduler's status waits for the control loop's thread.
    @app.get("/metrics", include_in_schema=False, dependencies=[Depends(allowed)])
    def scrape() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
