"""The FastAPI application: `create_app(repository, scheduler, logs)` wires the routers, the
auth dependencies and the error handlers together, and serves `GET /healthz` without auth."""

from collections.abc import Mapping
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.types import ASGIApp

from shoal.api.defaults import FOLLOWS_PER_USER
from shoal.api.images import ImagePolicy
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.admin import admin_router
from shoal.server.audit import audit_router
from shoal.server.auth import authenticator
from shoal.server.cluster import cluster_router
from shoal.server.direct import direct_lanes
from shoal.server.errors import ApiError, install_error_handlers
from shoal.server.job_controls import job_controls_router
from shoal.server.job_watch import WATCHES_PER_USER, JobWatch
from shoal.server.jobs import jobs_router
from shoal.server.logs import FollowSlots, LogSource, logs_router
from shoal.server.metrics import MetricsAccess, ShoalMetrics, install_metrics
from shoal.server.node_admin import node_admin_router
from shoal.server.placements import placements_router
from shoal.server.scheduler import Scheduler
from shoal.server.sub_clusters import sub_clusters_router
from shoal.server.usage import usage_router
from shoal.server.web import mount_dashboard, offline_app
from shoal.spec.limits import DEFAULT_LIMITS, Limits
from shoal.store import Repository

if TYPE_CHECKING:
    from shoal.federation.service import Federation

API_TITLE = "Shoal"
API_VERSION = "v1"
NO_TELEMETRY = TelemetryConfig(tracing=False, metrics=False, logs=False)
"""FastAPI's own OpenTelemetry hooks, off: Shoal serves its own series (`GET /metrics`) and
makes no spans. On, FastAPI asks OpenTelemetry for its three global providers on every
request to learn that none is configured — ~25 µs of a request's CPU, about what the rest of
the middleware stack costs together (issue 18)."""


def create_app(repository: Repository, scheduler: Scheduler,
               logs: LogSource | None = None, *,
               follows_per_user: int = FOLLOWS_PER_USER,
               limits: Limits = DEFAULT_LIMITS,
               federation: "Federation | None" = None,
               images: ImagePolicy = ImagePolicy.REFUSE,
               metrics: ShoalMetrics | None = None,
               metrics_access: MetricsAccess | None = None,
               watches_per_user: int = WATCHES_PER_USER) -> FastAPI:
    """`logs` reads a task's output (`shoal.server.logs.LogSource`: the executor's
    `read_log`, or `file_logs`); without it the log route answers 404. `follows_per_user`:
    how many `logs?follow=true` streams one user may hold open at once; `app.state.follows`
    counts those open. `limits`: what one request body may be and hold (`app.state.limits`,
    read by `shoal.server.body`). `federation`: the super scheduler of `shoal up`
    (`shoal.server.multicluster`'s routes); without it those routes do not exist.
    `images`: what the engine does with container images (`shoal up --images`): a job that
    names one is refused at submission under REFUSE. `metrics`: the series `GET /metrics`
    serves (the control loop's observer; None: a fresh set, with no loop's series moving),
    readable as `metrics_access` says (default: any valid token). `watches_per_user`: how
    many `jobs?watch=true` streams one user may hold open; `app.state.watches` (a `JobWatch`)
    holds them, and its `close()` ends them when the server shuts down."""
    app = offline_app(title=API_TITLE, version=API_VERSION, telemetry=NO_TELEMETRY,
                      description="Shoal's REST API: submit and follow deep-learning jobs; "
                                  "manage nodes, virtual clusters, priority classes and "
                                  "users. Authenticate with `Authorization: Bearer <token>`.")
    lanes: dict[tuple[str, str], ASGIApp] = {}  # filled below, once every route is added
    install_error_handlers(app, lanes)
    app.state.limits = limits
    current_user, current_admin = authenticator(repository)

    # Async: a sync route costs a hop through the thread pool, many times the work here.
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.state.watches = JobWatch(repository, scheduler.pending_reason,
                                 per_user=watches_per_user)
    app.include_router(jobs_router(repository, scheduler, current_user, images,
                                   app.state.watches))
    app.include_router(job_controls_router(repository, scheduler, current_user))
    app.state.follows = FollowSlots(follows_per_user)
    app.include_router(logs_router(repository, logs, current_user, app.state.follows))
    def statuses() -> Mapping[str, VirtualClusterStatus]:
        try:
            return scheduler.virtual_cluster_status()
        except TimeoutError:  # the control loop is stuck in a long step
            raise ApiError(503, "the scheduler did not answer in time; try again") from None

    app.include_router(cluster_router(repository, current_user, current_admin,
                                      scheduler.reload_catalog, statuses))
    app.include_router(sub_clusters_router(repository, scheduler, current_user, statuses))
    app.include_router(placements_router(repository, current_user))
    app.state.metrics = metrics = metrics or ShoalMetrics()
    metrics.watch_state(repository, statuses)
    install_metrics(app, repository, metrics, metrics_access or MetricsAccess())
    app.include_router(admin_router(repository, scheduler, current_admin,
                                    scheduler.reload_catalog, statuses))
    app.include_router(node_admin_router(repository, scheduler, current_admin))
    app.include_router(audit_router(repository, current_admin))
    app.include_router(usage_router(repository, current_user))
    if federation is not None:  # `shoal up`: the super scheduler's routes
        from shoal.server.multicluster import multicluster_router
        app.include_router(multicluster_router(federation, current_user))
        if federation.admin is not None:  # members declared through the API (admins)
            from shoal.server.mc_admin import mc_admin_router
            app.include_router(mc_admin_router(federation, current_admin))
    mount_dashboard(app)  # `/`: the web dashboard (shoal.server.web)
    lanes.update(direct_lanes(app))  # `POST /api/v1/jobs` served without the router
    return app
