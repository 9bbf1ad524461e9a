"""What `shoal up` runs (its flags are declared in `shoal.cli.up`, which imports this module
only when the command runs: it loads the server, the store, the control loop and the
executors). Shoal on one machine — the REST API, the control loop and the local executor
in one process, over an embedded SQLite store (or PostgreSQL by URL) — or, with `--engine
ray`, on the machines of a Ray cluster (`shoal.cli.engines`).

Start-up order matters for crash safety: migrate the store, record the nodes, reconcile the
control plane from the store (adopting tasks that survived a crash), and only then accept
requests. The control loop runs on its own thread; the API server on the main one. On
SIGINT/SIGTERM the loop stops and running tasks are left alive on purpose: the next
`shoal up` adopts them.

It also decides, once, how tasks are isolated (`shoal.executors.isolation`): as root, each
task runs as an unprivileged OS user (one per Shoal user, or `--task-user`) in a working
directory under `--work-dir`; not as root, tasks are refused unless `--insecure-same-user`.
The data directory is made 0700 and everything the server creates in it private (umask
0o077), and a writable cgroup hierarchy, if any, turns requests into limits.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import typer
import uvicorn
from rich.console import Console
from rich.markup import escape

from shoal.api import TaskRef
from shoal.api.defaults import FOLLOWS_PER_USER
from shoal.api.images import ImagePolicy
from shoal.cli.engines import LOCAL, EngineChoice, EngineError, start_engine
from shoal.cli.errors import USAGE_ERROR, user_errors
from shoal.cli.profiles import load_profile
from shoal.control.loop import ControlPlane
from shoal.control.ownership import InUseError, exclusive
from shoal.control.scale_up import ScaleUpHook
from shoal.executors import cgroups
from shoal.executors.contract import Executor, LogStream
from shoal.executors.isolation import IsolationError, Mode, Policy, check_work_root, decide
from shoal.executors.local import Isolation
from shoal.federation.registry import ClusterRegistry, load_registry_file
from shoal.federation.service import Federation
from shoal.scheduler.profile import Profile
from shoal.server.app import create_app
from shoal.server.http_protocol import OneWriteHttpProtocol
from shoal.server.job_watch import JobWatch
from shoal.server.logs import LogSource
from shoal.server.metrics import MetricsAccess, ShoalMetrics
from shoal.spec import SpecBundle, load_file
from shoal.spec.limits import DEFAULT_LIMITS, Limits
from shoal.store.engine import Store, open_store
from shoal.store.repository import Repository

#: The user `shoal up` creates, whose token it writes to the data directory.
ADMIN = "admin"


def start(*, data_dir: Path, host: str, port: int, db: str | None, cluster: Path | None,
          max_body_bytes: int, max_tasks_per_job: int, max_nodes: int,
          max_follows_per_user: int, profile: str, interval: float, grace: float,
          scale_up_hook: str | None, scale_up_cooldown: float, task_user_prefix: str,
          task_user: str | None, insecure_same_user: bool, work_dir: Path, job_ttl: float,
          engine: EngineChoice, clusters: Path | None = None, mc_poll: float = 5.0,
          mc_timeout: float = 10.0, images: ImagePolicy = ImagePolicy.REFUSE,
          metrics_token: str | None = None, metrics_open: bool = False) -> None:
    """Run `shoal up` with its flags (checked by `shoal.cli.up`) until SIGINT/SIGTERM."""
    hook = None if scale_up_hook is None else ScaleUpHook(scale_up_hook, scale_up_cooldown)
    metrics = MetricsAccess(open=metrics_open, token=metrics_token)

    def serve() -> None:
        try:
            policy = decide(os.geteuid(), insecure_same_user=insecure_same_user,
                            task_user=task_user, prefix=task_user_prefix)
            limits = Limits(max_body_bytes=max_body_bytes, max_tasks_per_job=max_tasks_per_job,
                            max_replicas=max_tasks_per_job, max_nodes=max_nodes)
            _serve(data_dir, host, port, db, cluster, profile, interval, grace, hook,
                   _Tasks(policy, work_dir), job_ttl=job_ttl, limits=limits,
                   follows_per_user=max_follows_per_user, engine=engine,
                   mc=_McOptions(clusters, mc_poll, mc_timeout), images=images,
                   metrics=metrics)
        except (IsolationError, EngineError, InUseError) as exc:  # nothing has started yet
            Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}",
                                       highlight=False)
            raise typer.Exit(USAGE_ERROR) from None
    user_errors(serve)


@dataclass(frozen=True)
class _McOptions:
    """`--clusters`, `--mc-poll` and `--mc-timeout`: the super scheduler's options (it always
    runs; a clusters file adds read-only members to those declared through the API)."""

    clusters: Path | None
    poll_s: float
    timeout_s: float

    def registry(self) -> ClusterRegistry | None:
        """Read before anything starts: a bad clusters file stops `shoal up` at once."""
        return None if self.clusters is None else load_registry_file(self.clusters)


class _Tasks:
    """How `shoal up` runs tasks: the isolation policy and the work root, from the flags."""

    def __init__(self, policy: Policy, work_dir: Path) -> None:
        self.policy = policy
        self.work_dir = work_dir

    def isolation(self, out: Console, executor_root: Path) -> Isolation:
        """Check what the policy needs, say once how tasks will run, and detect cgroups."""
        work_root = check_work_root(self.work_dir) if self.policy.switches_user else None
        warn = Console(stderr=True)
        if self.policy.mode in (Mode.REFUSED, Mode.SAME_USER):
            warn.print(f"WARNING: {self.policy.reason}", style="bold red", highlight=False,
                       soft_wrap=True)
        else:
            out.print(f"{self.policy.reason}; working directories under {work_root}",
                      highlight=False, soft_wrap=True)
        tag = hashlib.sha256(str(executor_root.resolve()).encode()).hexdigest()[:12]
        found = cgroups.detect(tag)
        if isinstance(found, cgroups.Unavailable):
            warn.print(f"no writable cgroup hierarchy ({found.reason}): tasks run without "
                       f"CPU and memory limits", highlight=False, soft_wrap=True)
            return Isolation(self.policy, work_root, None)
        out.print(found.describe(), highlight=False, soft_wrap=True)
        return Isolation(self.policy, work_root, found)


def _serve(data_dir: Path, host: str, port: int, db: str | None, cluster: Path | None,
           profile: str, interval: float, grace: float, hook: ScaleUpHook | None,
           tasks: _Tasks, *, job_ttl: float, limits: Limits = DEFAULT_LIMITS,
           follows_per_user: int = FOLLOWS_PER_USER,
           engine: EngineChoice = LOCAL, mc: _McOptions | None = None,
           images: ImagePolicy = ImagePolicy.REFUSE,
           metrics: MetricsAccess | None = None) -> None:
    out = Console()
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)  # also when it exists from an older, 0755 start
    chosen = load_profile(profile)  # a bad profile or cluster file fails before anything starts
    bundle = load_file(cluster, limits=limits) if cluster is not None else None
    engine.check(bundle)
    registry = mc.registry() if mc is not None else None
    # Everything the server creates is its own: the store, tokens, task records and logs.
    os.umask(0o077)
    store = open_store(db or f"sqlite:///{(data_dir / 'shoal.db').resolve()}")
    with exclusive(data_dir, store):
        listener = _listen(host, port)  # a port in use fails here, before any task is touched
        store.migrate()
        for private in data_dir.glob("shoal.db*"):  # the store, its journal or WAL
            private.chmod(0o600)
        federation = None
        if mc is not None:
            # The super scheduler always runs: admins may declare members through the API
            # (`POST /api/v1/clusters`) without a clusters file; with none it only reads the
            # store's members at each pass.
            federation = Federation.start(registry or ClusterRegistry(()), store, data_dir,
                                          poll_s=mc.poll_s, timeout_s=mc.timeout_s,
                                          limits=limits)
            declared = len(federation.registry) - len(registry or ())
            source = f"{len(registry)} from {mc.clusters}" if registry is not None else \
                "none from a clusters file"
            out.print(f"super scheduler: member clusters {source}, {declared} declared "
                      f"through the API; polled every {mc.poll_s:g} s", highlight=False,
                      soft_wrap=True)
        try:
            _run(out, data_dir, store, listener, bundle, chosen, interval, grace, hook, tasks,
                 job_ttl=job_ttl, limits=limits, follows_per_user=follows_per_user,
                 engine=engine, federation=federation, images=images, metrics=metrics)
        finally:
            if federation is not None:
                federation.close()


def _run(out: Console, data_dir: Path, store: Store, listener: socket.socket,
         bundle: SpecBundle | None, chosen: Profile, interval: float, grace: float,
         hook: ScaleUpHook | None, tasks: _Tasks, *, job_ttl: float,
         limits: Limits = DEFAULT_LIMITS, follows_per_user: int = FOLLOWS_PER_USER,
         engine: EngineChoice = LOCAL, federation: Federation | None = None,
         images: ImagePolicy = ImagePolicy.REFUSE, metrics: MetricsAccess | None = None
         ) -> None:
    repository = Repository(store)
    series = ShoalMetrics()  # the control loop's observer, served at /metrics
    token_path = _admin_token(repository, data_dir)

    root = data_dir / "executor"
    isolation = tasks.isolation(out, root)
    started = start_engine(engine, root, bundle, grace=grace, isolation=isolation)
    executor: Executor = started.executor
    nodes = repository.keep_cordons(started.nodes)
    out.print(engine.describe(nodes), highlight=False, soft_wrap=True)
    vcs = bundle.virtual_clusters if bundle is not None else ()
    pcs = bundle.priority_classes if bundle is not None else ()
    flavors = bundle.resource_flavors if bundle is not None else ()
    for flavor in flavors:
        repository.put_resource_flavor(flavor)
    for node in nodes:
        repository.put_node(node)
    for vc in vcs:
        repository.put_virtual_cluster(vc)
    for pc in pcs:
        repository.put_priority_class(pc)

    host, port = listener.getsockname()[:2]
    # Tasks reach the API at the address they can: this machine's on the engine's network
    # when it listens on every address, else the one it listens on.
    api_host = started.api_host if host in _LOOPBACK and started.api_host else \
        _LOOPBACK.get(host, host)
    url = _url(host, port)
    plane = ControlPlane(repository, executor, nodes, chosen,
                         virtual_clusters=repository.list_virtual_clusters(),
                         priority_classes=repository.list_priority_classes(),
                         resource_flavors=repository.list_resource_flavors(),
                         interval=interval, grace_period=grace, scale_up=hook,
                         server_url=_url(api_host, port), job_ttl=job_ttl,
                         observer=series)
    plane.start()
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,), name="shoal-control",
                            daemon=True)
    loop.start()

    app = create_app(repository, plane, _log_source(executor), limits=limits,
                     follows_per_user=follows_per_user, watches_per_user=follows_per_user,
                     federation=federation, images=images, metrics=series,
                     metrics_access=metrics)
    server = _Server(uvicorn.Config(app, log_level="warning", http=OneWriteHttpProtocol),
                     app.state.watches)
    out.print(f"Shoal is up: {url}  (dashboard: {url}/, API docs: {url}/docs)",
              highlight=False)
    out.print(f"admin token: {token_path}", highlight=False)
    access = metrics or MetricsAccess()
    out.print(f"metrics: {url}/metrics ("
              + ("open to anyone" if access.open else "any Shoal token"
                 + (" or the scrape token" if access.token else "")) + ")", highlight=False)
    try:
        server.run(sockets=[listener])
    finally:
        stop.set()
        loop.join(timeout=10)
        if isolation.cgroups is not None:
            isolation.cgroups.release()


class _Server(uvicorn.Server):
    """Uvicorn, which ends the job watches before it waits for open connections to finish:
    a watch never finishes by itself, and the server would wait for ever."""

    def __init__(self, config: uvicorn.Config, watches: JobWatch) -> None:
        super().__init__(config)
        self.watches = watches

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.watches.close()
        await super().shutdown(sockets)


#: Where a task reaches a server listening on every address (tasks run on this machine).
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _listen(host: str, port: int) -> socket.socket:
    """The API's listening socket, bound before the control plane starts: with the port
    taken, `shoal up` stops with a clear error instead of reconciling tasks first."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise InUseError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listener.listen(2048)
    return listener


def _admin_token(repository: Repository, data_dir: Path) -> Path:
    """Create the admin user and write its token once; tokens are stored hashed, so an
    existing token file is the only copy and is kept."""
    path = data_dir / "admin.token"
    if repository.get_user(ADMIN) is None:
        repository.create_user(ADMIN, admin=True)
        token = repository.issue_token(ADMIN)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(token + "\n")
    if path.exists():
        path.chmod(0o600)  # a token file from an older start may be 0644
    return path


def _log_source(executor: Executor) -> LogSource:
    """The server's log reader: the executor's `read_log`, whatever engine runs the task."""

    def read(ref: TaskRef, stream: str, offset: int, limit: int) -> tuple[int, bytes]:
        which: LogStream = "stderr" if stream == "stderr" else "stdout"
        chunk = executor.read_log(ref.job, ref.group, ref.index, which, offset, limit)
        return chunk.offset, chunk.data

    return read
