"""`ShoalClient`: a small typed client of Shoal's REST API (`/api/v1`, see `shoal.server`).

    with ShoalClient("http://127.0.0.1:8765", token) as shoal:
        job = shoal.submit(Path("job.yaml"))
        shoal.wait(job.name)
        print("".join(shoal.logs(job.name)))

It owns the HTTP conversation only: authentication header, error parsing (`errors.py`), the
retry of safe requests, and turning JSON into views (`models.py`). Where the server URL and
token come from is the caller's business (the CLI's is `shoal.cli.config`).
"""

from __future__ import annotations

import codecs
import json
import os
import ssl
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from shoal.api import JobState
from shoal.client.admin import AdminVerbs
from shoal.client.errors import (
    ShoalConnectionError,
    ShoalError,
    ShoalServerTimeoutError,
    ShoalTimeoutError,
    api_error,
)
from shoal.client.models import (
    TERMINAL_STATES,
    EventView,
    JobDeletion,
    JobPage,
    JobView,
    Json,
    OriginalView,
    TaskPage,
    TaskView,
)
from shoal.client.multicluster import MultiClusterVerbs
from shoal.client.watch import WATCH_READ_TIMEOUT, JobEvents

if TYPE_CHECKING:  # imported by the calls that return them: the job verbs define none
    from shoal.client.cluster_views import (
        NodeView,
        PriorityClassView,
        ResourceFlavorView,
        UserView,
        VirtualClusterStatusView,
        VirtualClusterView,
    )
    from shoal.client.usage import UsageView

#: Where `shoal up` listens by default.
DEFAULT_SERVER = "http://127.0.0.1:8765"
API = "/api/v1"
#: Items asked for per request of a catalog list (the server's maximum, `MAX_LIST`).
LIST_PAGE = 1000
#: Bytes of a log asked for in one request without `follow` (the server's default).
LOG_PAGE = 1024 * 1024
NEXT_OFFSET = "X-Shoal-Next-Offset"
YAML = "application/yaml"
JSON = "application/json"
SCRIPT = "text/x-shellscript"
"""A batch script (its first line `#!`): a Slurm `#SBATCH` script the server imports."""
#: File names that name a spec when given as a one-line string.
SPEC_SUFFIXES = (".yaml", ".yml", ".json", ".sbatch", ".slurm", ".sh")

#: A spec to send: YAML text or a batch script's text, a file (a `Path`, or a one-line string
#: ending in one of `SPEC_SUFFIXES`), or the documents as a mapping.
Spec = str | os.PathLike[str] | Mapping[str, Any]


class LogStream(Iterator[str]):
    """A task's log as text chunks, as they arrive (join them for the whole log). `task`
    names the task the server chose (`worker-0`). Close it, or use it as a context manager,
    to stop following early.

    A read without `follow` is answered a page at a time (at most `LOG_PAGE` bytes); after
    a full page the next is asked for from the server's `X-Shoal-Next-Offset`, so the
    stream still holds the whole log. The bytes are decoded as one UTF-8 text, so a
    character split between two pages or chunks comes out whole."""

    def __init__(self, response: httpx.Response, url: str,
                 next_page: Callable[[int], httpx.Response] | None = None,
                 timeout: float = 30.0) -> None:
        self._response = response
        self._next_page = next_page
        self._chunks = self._texts()
        self._url = url
        self._timeout = timeout
        self.task: str | None = response.headers.get("X-Shoal-Task")

    def _texts(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            for data in self._response.iter_bytes():
                if text := decoder.decode(data):
                    yield text
            offset = self._response.headers.get(NEXT_OFFSET)
            page = self._response.request.url.params.get("limit")
            start = self._response.request.url.params.get("offset", "0")
            if (self._next_page is None or offset is None or page is None
                    or int(offset) - int(start) < int(page)):
                break
            self._response.close()
            self._response = self._next_page(int(offset))
        if tail := decoder.decode(b"", final=True):
            yield tail

    def __next__(self) -> str:
        try:
            return next(self._chunks)
        except StopIteration:
            self.close()
            raise
        except httpx.TransportError as exc:
            self.close()
            raise _unanswered(self._url, exc, self._timeout) from None

    def close(self) -> None:
        self._response.close()

    def __enter__(self) -> LogStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


class ShoalClient(MultiClusterVerbs, AdminVerbs):
    """A client of one Shoal server. Pass `http` to use a prebuilt `httpx.Client` (FastAPI's
    `TestClient` in tests); it is then left open by `close`. Pass `transport` to send
    through another httpx transport (the command line's is `plain_http.for_url`'s).

    Reads and submissions are retried once after a connection failure or timeout; a
    submission keeps its `Idempotency-Key`, so a retry whose first attempt did reach the
    server returns the job stored then instead of a second one.
    """

    def __init__(self, base_url: str = DEFAULT_SERVER, token: str | None = None, *,
                 http: httpx.Client | None = None, timeout: float = 30.0,
                 retry_delay: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._own = http is None
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout,
                                          verify=_tls_for(base_url), transport=transport)
        self.url = str(self._http.base_url).rstrip("/") if http is not None else base_url
        self.token = token
        self.timeout = timeout
        self.retry_delay = retry_delay

    # ---- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> ShoalClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _send(self, method: str, path: str, *, retry: bool, stream: bool = False,
              timeout: httpx.Timeout | None = None, **kwargs: Any) -> httpx.Response:
        """One request, retried once on a transport failure when `retry`; an error status
        becomes `ShoalApiError`."""
        request = self._http.build_request(method, path, headers=self._headers(
            kwargs.pop("headers", None)), timeout=timeout or self.timeout, **kwargs)
        for attempt in (1, 2):
            try:
                response = self._http.send(request, stream=stream)
                break
            except httpx.TransportError as exc:
                if not retry or attempt == 2:
                    raise _unanswered(self.url, exc, self.timeout) from None
                time.sleep(self.retry_delay)
        if response.is_error:
            response.read()
            response.close()
            raise api_error(response)
        return response

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            raise ShoalError(f"{self.url} answered {response.request.url.path} with "
                             f"{kind}, not Shoal's JSON: is it a Shoal server?") from None

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._json(self._send("GET", path, retry=True, params=_clean(params or {})))

    def _post_spec(self, path: str, spec: Spec, headers: Mapping[str, str] | None = None,
                   *, retry: bool = False) -> Any:
        content_type, body = spec_body(spec)
        named = spec_file_name(spec) if content_type == SCRIPT else None
        # A script without -J is named after its file, as sbatch names it.
        disposition = {"Content-Disposition": f'inline; filename="{named}"'} if named else {}
        return self._json(self._send("POST", path, retry=retry,
                                     content=body, headers={"Content-Type": content_type,
                                                            **disposition, **(headers or {})}))

    # ---- jobs ------------------------------------------------------------------------------

    def submit(self, spec: Spec, idempotency_key: str | None = None) -> JobView:
        """Submit one job document (`shoal/v1`, or one Shoal imports: a Volcano or Kubernetes
        Job, ...); returns the (first) job as stored. One document may become several
        jobs: `JobView.jobs` names them all."""
        key = idempotency_key or str(uuid.uuid4())
        data = self._post_spec(f"{API}/jobs", spec, {"Idempotency-Key": key}, retry=True)
        return JobView.from_json(data)

    def list_jobs(self, *, state: JobState | str | None = None, queue: str | None = None,
                  user: str | None = None, limit: int = 50, after: str | None = None
                  ) -> JobPage:
        """One page of jobs in submission order."""
        params = {"state": None if state is None else str(state), "queue": queue,
                  "user": user, "limit": limit, "after": after}
        return JobPage.from_json(self._get(f"{API}/jobs", params))

    def iter_jobs(self, *, state: JobState | str | None = None, queue: str | None = None,
                  user: str | None = None, page_size: int = 100) -> Iterator[JobView]:
        """Every matching job, page after page."""
        after: str | None = None
        while True:
            page = self.list_jobs(state=state, queue=queue, user=user, limit=page_size,
                                  after=after)
            yield from page.items
            if page.next is None:
                return
            after = page.next

    def get_job(self, name: str) -> JobView:
        """The job: its spec, its task counts, why it waits, and its latest events."""
        return JobView.from_json(self._get(f"{API}/jobs/{_quote(name)}"))

    def original(self, name: str) -> OriginalView:
        """The document the job was imported from; a job written as `shoal/v1` has none
        (the server answers 404, raised as `NotFound`)."""
        return OriginalView.from_json(self._get(f"{API}/jobs/{_quote(name)}/original"))

    def tasks(self, name: str, *, limit: int = 100, after: str | None = None) -> TaskPage:
        """One page of the job's tasks in task order; `after` is the previous page's
        `next` (a task's name)."""
        return TaskPage.from_json(self._get(f"{API}/jobs/{_quote(name)}/tasks",
                                            {"limit": limit, "after": after}))

    def iter_tasks(self, name: str, *, page_size: int = 500) -> Iterator[TaskView]:
        """Every task of the job, page after page."""
        after: str | None = None
        while True:
            page = self.tasks(name, limit=page_size, after=after)
            yield from page.items
            if page.next is None:
                return
            after = page.next

    def delete_job(self, name: str) -> JobDeletion:
        """Delete a job (yours, or any as an admin): one that has ended is removed now;
        one still running is cancelled and removed once its tasks have stopped."""
        # Retried: a second DELETE of a job being removed answers the same, and of one
        # already removed a 404, which says as much.
        data = self._json(self._send("DELETE", f"{API}/jobs/{_quote(name)}", retry=True))
        return JobDeletion.from_json(data)

    def cancel(self, name: str) -> JobView:
        # Not retried: had the first attempt landed, the retry would fail with 409.
        data = self._json(self._send("POST", f"{API}/jobs/{_quote(name)}/cancel", retry=False))
        return JobView.from_json(data)

    def hold(self, name: str) -> JobView:
        """Hold a pending job: it is not scheduled until released (409 once it started)."""
        return self._control(name, "hold")

    def release(self, name: str) -> JobView:
        """Release a held job."""
        return self._control(name, "release")

    def requeue(self, name: str, *, hold: bool = False) -> JobView:
        """Stop a started job's tasks and put it back to pending (held too with `hold`)."""
        return self._control(name, "requeue?hold=true" if hold else "requeue")

    def _control(self, name: str, verb: str) -> JobView:
        # Not retried: a requeue that landed and is repeated would requeue the next run.
        data = self._json(self._send("POST", f"{API}/jobs/{_quote(name)}/{verb}", retry=False))
        return JobView.from_json(data)

    def events(self, name: str, *, page_size: int = 500) -> list[EventView]:
        """The job's whole history, oldest first (read a page at a time)."""
        out: list[EventView] = []
        after: int | None = None
        while True:
            data = self._get(f"{API}/jobs/{_quote(name)}/events",
                             {"limit": page_size, "after": after})
            out += [EventView.from_json(e) for e in data["items"]]
            if data.get("next") is None:
                return out
            after = int(data["next"])

    def logs(self, name: str, task: str | None = None, stream: str = "stdout",
             follow: bool = False, offset: int = 0) -> LogStream:
        """A task's stdout or stderr (`task` is `GROUP-INDEX`; default: the first task), from
        byte `offset`; with `follow`, until the task ends. The request is made now, so an
        unknown job or task raises here, not on the first read."""
        # A followed task may print nothing for a long time: no read timeout then.
        timeout = httpx.Timeout(self.timeout, read=None) if follow else None

        def read(start: int) -> httpx.Response:
            params = _clean({"task": task, "stream": stream, "follow": str(follow).lower(),
                             "offset": start, "limit": None if follow else LOG_PAGE})
            return self._send("GET", f"{API}/jobs/{_quote(name)}/logs", retry=True,
                              stream=True, timeout=timeout, params=params)

        return LogStream(read(offset), self.url, None if follow else read, self.timeout)

    def watch_jobs(self, *, state: JobState | str | None = None, queue: str | None = None,
                   user: str | None = None) -> JobEvents:
        """Follow the jobs that match (as `list_jobs` filters): an `ADDED` event for each
        now, then one per change (`shoal.client.watch`). The request is made now, so a
        refusal (429: too many watches open) raises here."""
        timeout = httpx.Timeout(self.timeout, read=max(self.timeout, WATCH_READ_TIMEOUT))
        params = _clean({"watch": "true", "state": None if state is None
                         else JobState(state).value, "queue": queue, "user": user})
        response = self._send("GET", f"{API}/jobs", retry=True, stream=True, timeout=timeout,
                              params=params)
        return JobEvents(response, lambda exc: _unanswered(self.url, exc, self.timeout))

    def wait(self, name: str, states: Collection[JobState | str] = TERMINAL_STATES,
             timeout: float | None = None, interval: float = 0.5) -> JobView:
        """Poll until the job is in one of `states` (default: finished); raises
        `ShoalTimeoutError` after `timeout` seconds (None: wait for ever)."""
        wanted = {JobState(s) for s in states}
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get_job(name)
            if job.state in wanted:
                return job
            if deadline is not None and time.monotonic() + interval > deadline:
                raise ShoalTimeoutError(name, job.state.value, timeout or 0.0)
            time.sleep(interval)

    # ---- cluster ---------------------------------------------------------------------------

    def _all(self, path: str) -> list[Json]:
        """Every item of a catalog list, which answers at most LIST_PAGE at a time."""
        out: list[Json] = []
        after: str | None = None
        while True:
            page = self._get(path, {"limit": LIST_PAGE, "after": after})
            out += page
            if len(page) < LIST_PAGE:
                return out
            after = str(page[-1]["name"])

    def nodes(self) -> list[NodeView]:
        from shoal.client.cluster_views import NodeView
        return [NodeView.from_json(n) for n in self._all(f"{API}/nodes")]

    def virtual_clusters(self) -> list[VirtualClusterView]:
        """Every declared virtual cluster with its spec and its status now."""
        from shoal.client.cluster_views import VirtualClusterView
        return [VirtualClusterView.from_json(v) for v in self._all(f"{API}/virtual-clusters")]

    def virtual_cluster(self, name: str) -> VirtualClusterView:
        """One virtual cluster (`default` included) with its status."""
        from shoal.client.cluster_views import VirtualClusterView
        return VirtualClusterView.from_json(
            self._get(f"{API}/virtual-clusters/{_quote(name)}"))

    def cluster(self) -> VirtualClusterStatusView:
        """The physical cluster as the root of the virtual-cluster tree; with a job's token,
        the job's own virtual cluster (or its queue)."""
        from shoal.client.cluster_views import VirtualClusterStatusView
        return VirtualClusterStatusView.from_json(self._get(f"{API}/cluster"))

    def create_virtual_clusters(self, spec: Spec) -> list[VirtualClusterView]:
        """Create the VirtualCluster documents of `spec` (admins only)."""
        from shoal.client.cluster_views import VirtualClusterView
        return [VirtualClusterView.from_json(v)
                for v in self._post_spec(f"{API}/virtual-clusters", spec)]

    def create_sub_clusters(self, job: str, spec: Spec) -> list[VirtualClusterView]:
        """Create the VirtualCluster documents of `spec` as sub-clusters of `job`'s own
        virtual cluster (its token, its owner, or an admin): `metadata.name` is the name
        within the job, `spec.parent` `root` (the job's own) or another of its
        sub-clusters. The answer names them as they are submitted into: `job:<job>/<name>`."""
        from shoal.client.cluster_views import VirtualClusterView
        return [VirtualClusterView.from_json(v)
                for v in self._post_spec(f"{API}/jobs/{_quote(job)}/virtual-clusters", spec)]

    def job_virtual_clusters(self, job: str) -> list[VirtualClusterView]:
        """`job`'s own virtual cluster and its sub-clusters, with their status now."""
        from shoal.client.cluster_views import VirtualClusterView
        return [VirtualClusterView.from_json(v)
                for v in self._all(f"{API}/jobs/{_quote(job)}/virtual-clusters")]

    def priority_classes(self) -> list[PriorityClassView]:
        from shoal.client.cluster_views import PriorityClassView
        return [PriorityClassView.from_json(p) for p in self._all(f"{API}/priority-classes")]

    def resource_flavors(self) -> list[ResourceFlavorView]:
        """Every resource flavor, with how many nodes its labels match now."""
        from shoal.client.cluster_views import ResourceFlavorView
        return [ResourceFlavorView.from_json(f) for f in self._all(f"{API}/resource-flavors")]

    def create_resource_flavors(self, spec: Spec) -> list[ResourceFlavorView]:
        """Create the ResourceFlavor documents of `spec` (admins only)."""
        from shoal.client.cluster_views import ResourceFlavorView
        return [ResourceFlavorView.from_json(f)
                for f in self._post_spec(f"{API}/resource-flavors", spec)]

    # ---- usage -----------------------------------------------------------------------------

    def usage(self, *, by: str = "queue", since: str | None = None, until: str | None = None,
              step: str = "none") -> UsageView:
        """The usage report (`GET /api/v1/usage`): resource-seconds of ended task attempts
        by `by` over [since, until) (ISO 8601; default the last 7 days), a series per `step`."""
        from shoal.client.usage import UsageView
        return UsageView.from_json(self._get(f"{API}/usage", {
            "by": by, "since": since, "until": until, "step": step}))

    # ---- users -----------------------------------------------------------------------------

    def create_user(self, name: str, queues: Collection[str] = (), admin: bool = False
                    ) -> UserView:
        """Create a user (admins only); the answer's `token` is the only copy."""
        body = {"name": name, "queues": list(queues), "admin": admin}
        from shoal.client.cluster_views import UserView
        return UserView.from_json(self._json(self._send("POST", f"{API}/users", retry=False,
                                                        json=body)))

    def me(self) -> UserView:
        """The user the token belongs to."""
        from shoal.client.cluster_views import UserView
        return UserView.from_json(self._get(f"{API}/users/me"))

    def health(self) -> str:
        """The server's health (`ok`); needs no token."""
        return str(self._get("/healthz").get("status", "unknown"))


def wait_until_healthy(url: str, timeout: float = 30.0,
                       starting: Callable[[], bool] = lambda: True) -> bool:
    """Poll `GET url/healthz` until it answers 200 (True), or `timeout` seconds pass or
    `starting()` turns false — the server process exited — (False): for scripts and tests
    that start `shoal up` themselves."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and starting():
        try:
            if httpx.get(f"{url.rstrip('/')}/healthz", timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


def spec_body(spec: Spec) -> tuple[str, bytes]:
    """The content type and body that carry a spec: a mapping or a `.json` file as JSON (the
    server reads JSON several times faster than YAML), anything else as YAML."""
    if isinstance(spec, Mapping):
        return JSON, json.dumps(dict(spec)).encode()
    path = _spec_path(spec)
    if path is None:
        text = str(spec)
        return (SCRIPT if text.startswith("#!") else YAML), text.encode()
    data = path.read_bytes()
    if data.startswith(b"#!"):
        return SCRIPT, data
    return (JSON if path.suffix == ".json" else YAML), data


def spec_file_name(spec: Spec) -> str | None:
    """The file name of a spec given as a file, if it is a plain one that a header can
    carry."""
    path = None if isinstance(spec, Mapping) else _spec_path(spec)
    if path is None or not (path.name.isascii() and path.name.isprintable()) \
            or any(c in path.name for c in '"\\;'):
        return None
    return path.name


def spec_text(spec: Spec) -> str:
    """The YAML text of a spec given as text, a file or a mapping."""
    if isinstance(spec, Mapping):
        import yaml  # only here: loading it costs every `shoal` command's start

        return yaml.safe_dump(dict(spec), sort_keys=False)
    path = _spec_path(spec)
    return str(spec) if path is None else path.read_text(encoding="utf-8")


def _spec_path(spec: str | os.PathLike[str]) -> Path | None:
    if isinstance(spec, os.PathLike):
        return Path(spec)
    if "\n" not in spec and spec.endswith(SPEC_SUFFIXES):
        return Path(spec)
    return None


def _tls_for(base_url: str) -> ssl.SSLContext | bool:
    """The TLS setting of a client of `base_url`. For plain `http://`, a context that
    trusts no certificate: loading the CA bundle costs ~40 ms of CPU, a tenth of a
    `shoal jobs`, for nothing, and should a request ever reach an `https://` URL it fails
    verification instead of going unchecked. Otherwise httpx's default: verified."""
    if base_url.startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


def _clean(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _quote(name: str) -> str:
    # Job names are DNS-like, but a stray `/` or `?` must not change the route.
    return quote(name, safe="")


def _unanswered(url: str, exc: httpx.TransportError, timeout: float) -> ShoalConnectionError:
    """No answer: a timeout says how long was waited; anything else is unreachable."""
    if isinstance(exc, httpx.TimeoutException):
        return ShoalServerTimeoutError(url, timeout, _describe(exc))
    return ShoalConnectionError(url, _describe(exc))


def _describe(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    detail = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in detail.lower() else detail
