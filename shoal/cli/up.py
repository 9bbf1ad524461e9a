"""`shoal up`: Shoal on one machine — the REST API, the control loop and the local executor
in one process, over an embedded SQLite store (or PostgreSQL by URL) — or, with `--engine
ray`, on the machines of a Ray cluster (`shoal.cli.engines`).

This module declares the command and checks its flags; what it runs is `shoal.cli.serve`,
imported only when the command runs: every `shoal` command reads this signature, and a
`shoal submit` must not load the server, the store and the control loop. The defaults shown
come from `shoal.api.defaults`, light, for the same reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from shoal.api.defaults import (
    FOLLOWS_PER_USER,
    MAX_BODY_BYTES,
    MAX_NODES,
    MAX_TASKS_PER_JOB,
    TASK_USER_PREFIX,
    TASK_WORK_DIR,
)
from shoal.api.elastic import parse_duration
from shoal.api.images import ImagePolicy
from shoal.cli.engines import DEFAULT_RAY_NAMESPACE, RAY_AUTO, Engine, EngineChoice


def up(
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", help="Where the store, task logs and the admin token live.")]
    = Path(".shoal"),
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8765,
    db: Annotated[str | None, typer.Option(
        "--db", help="Store URL, e.g. postgresql+psycopg://user@host/db "
                     "(default: SQLite in the data directory).")] = None,
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", help="shoal/v1 YAML with the Nodes (slices of this host; GPUs may be "
                          "declared that are not present), VirtualClusters and "
                          "PriorityClasses. Default: this machine as one node.")] = None,
    max_body_bytes: Annotated[int, typer.Option(
        "--max-body-bytes", min=1, help="The largest request body the API reads; larger "
                                        "ones are refused with 413.")]
    = MAX_BODY_BYTES,
    max_tasks_per_job: Annotated[int, typer.Option(
        "--max-tasks-per-job", min=1, help="The most replicas one job (and one task group) "
                                           "may have.")]
    = MAX_TASKS_PER_JOB,
    max_nodes: Annotated[int, typer.Option(
        "--max-nodes", min=1, help="The most nodes one --cluster file or PUT /nodes may "
                                   "declare (a Node's count included).")]
    = MAX_NODES,
    max_follows_per_user: Annotated[int, typer.Option(
        "--max-follows-per-user", min=1, help="How many `logs --follow` streams one user "
                                              "may hold open at once, and how many `jobs "
                                              "--watch` streams; more are refused with "
                                              "429.")] = FOLLOWS_PER_USER,
    profile: Annotated[str, typer.Option("--profile", "-p")] = "default",
    interval: Annotated[float, typer.Option(
        "--interval", min=0.05, help="Seconds between cycles when nothing happens.")] = 5.0,
    grace: Annotated[float, typer.Option(
        "--grace-period", min=0.0, help="SIGTERM to SIGKILL, seconds.")] = 30.0,
    scale_up_hook: Annotated[str | None, typer.Option(
        "--scale-up-hook", help="A command (gets JSON on stdin) or http(s) URL (gets it "
                                "POSTed) called with the missing resources when jobs wait "
                                "for capacity.")] = None,
    scale_up_cooldown: Annotated[float, typer.Option(
        "--scale-up-cooldown", min=0.0, help="Seconds between two scale-up calls.")] = 300.0,
    task_user_prefix: Annotated[str, typer.Option(
        "--task-user-prefix", help="As root: each Shoal user's tasks run as OS user PREFIX"
                                   "<name>, created on demand.")] = TASK_USER_PREFIX,
    task_user: Annotated[str | None, typer.Option(
        "--task-user", help="As root: run every task as this one OS user instead (tasks of "
                            "different users can then read each other's files).")] = None,
    insecure_same_user: Annotated[bool, typer.Option(
        "--insecure-same-user", help="INSECURE: run tasks as this server's own user; they "
                                     "can read its store and admin token.")] = False,
    work_dir: Annotated[Path, typer.Option(
        "--work-dir", help="Where tasks that run as their own OS user get their working "
                           "directories (<work-dir>/<os user>/<job>/<group>-<index>).")]
    = TASK_WORK_DIR,
    job_ttl: Annotated[str, typer.Option(
        "--job-ttl", help="How long a job that ended is kept (seconds or a duration: 168h, "
                          "90m); then it is deleted with its tasks, events and logs. "
                          "0: never.")] = "168h",
    engine: Annotated[Engine, typer.Option(
        "--engine", help="Who runs the tasks: local (subprocesses of this machine) or ray "
                         "(the machines of a Ray cluster; its nodes are Shoal's).")]
    = Engine.LOCAL,
    ray_address: Annotated[str, typer.Option(
        "--ray-address", help="With --engine ray: the Ray cluster's GCS address "
                              "(HEAD:6379), or auto (the cluster this machine is part of, "
                              "or RAY_ADDRESS).")] = RAY_AUTO,
    ray_namespace: Annotated[str, typer.Option(
        "--ray-namespace", help="With --engine ray: the Ray namespace of this control "
                                "plane's actors (one per Shoal sharing a Ray cluster).")]
    = DEFAULT_RAY_NAMESPACE,
    clusters: Annotated[Path | None, typer.Option(
        "--clusters", help="A clusters file (kind: Cluster documents): members the super "
                           "scheduler dispatches multi-cluster jobs to, read-only through "
                           "the API. The super scheduler always runs: admins may also "
                           "declare members through the API (`shoal mc cluster add`).")
    ] = None,
    mc_poll: Annotated[float, typer.Option(
        "--mc-poll", min=0.05, help="Seconds between two polls of the "
                                    "members (sooner when a guard or survival window "
                                    "ends).")] = 5.0,
    images: Annotated[ImagePolicy, typer.Option(
        "--images", case_sensitive=False,
        help="What to do with a job whose tasks name a container image: refuse it at "
             "submission (no container runtime is offered), or ignore the image and run "
             "the command on the host, in the host's environment.")] = ImagePolicy.REFUSE,
    mc_timeout: Annotated[float, typer.Option(
        "--mc-timeout", min=0.1, help="Seconds one call to a member may "
                                      "take; a member that does not answer in time is "
                                      "retried with backoff and reported down.")] = 10.0,
    metrics_token_file: Annotated[Path | None, typer.Option(
        "--metrics-token-file", help="A file holding a scrape token: GET /metrics also "
                                     "accepts it as its Bearer token (Prometheus' "
                                     "bearer_token_file), besides any Shoal token. Read "
                                     "once, at start.")] = None,
    metrics_open: Annotated[bool, typer.Option(
        "--metrics-open", help="Serve GET /metrics to anyone, without a token.")] = False,
) -> None:
    """Start Shoal: API server, control loop and an engine (this machine, or Ray)."""
    ttl = _ttl(job_ttl)
    if metrics_open and metrics_token_file is not None:
        raise typer.BadParameter("--metrics-open serves /metrics without a token: a scrape "
                                 "token is then of no use", param_hint="--metrics-token-file")
    metrics_token = None if metrics_token_file is None else read_token_file(metrics_token_file)
    from shoal.cli.serve import start  # the server, store and control loop: see above

    start(data_dir=data_dir, host=host, port=port, db=db, cluster=cluster,
          max_body_bytes=max_body_bytes, max_tasks_per_job=max_tasks_per_job,
          max_nodes=max_nodes, max_follows_per_user=max_follows_per_user, profile=profile,
          interval=interval, grace=grace, scale_up_hook=scale_up_hook,
          scale_up_cooldown=scale_up_cooldown, task_user_prefix=task_user_prefix,
          task_user=task_user, insecure_same_user=insecure_same_user, work_dir=work_dir,
          job_ttl=ttl, engine=EngineChoice(engine, ray_address, ray_namespace),
          clusters=clusters, mc_poll=mc_poll, mc_timeout=mc_timeout, images=images,
          metrics_token=metrics_token, metrics_open=metrics_open)


#: The largest scrape token file read: one token and a newline, with room to spare.
MAX_TOKEN_FILE_BYTES = 4096


def read_token_file(path: Path) -> str:
    """The token in `path` (surrounding whitespace dropped); a file that cannot be read, is
    larger than MAX_TOKEN_FILE_BYTES, is empty or holds more than one printable ASCII word
    is a usage error naming the flag."""
    def refuse(why: str) -> typer.BadParameter:
        return typer.BadParameter(f"{path}: {why}", param_hint="--metrics-token-file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise refuse(f"cannot read it ({exc.strerror})") from None
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise refuse(f"larger than {MAX_TOKEN_FILE_BYTES} bytes; it must hold one token")
    token = data.strip()
    if not token:
        raise refuse("it is empty; it must hold one token")
    if not all(0x21 <= byte <= 0x7E for byte in token):
        raise refuse("a token is one word of printable ASCII characters (no spaces, no "
                     "control characters)")
    return token.decode("ascii")


def _ttl(text: str) -> float:
    """`--job-ttl` in seconds; a bad value is a usage error naming the flag."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--job-ttl") from None
    if not math.isfinite(seconds):
        raise typer.BadParameter(f"must be finite, got {text!r}", param_hint="--job-ttl")
    return seconds
