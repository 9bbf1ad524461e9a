"""The super scheduler's routes (issue 19), served by `shoal up`: the member clusters
(`GET /api/v1/clusters`, any user: never a credential; admins change them through
`shoal.server.mc_admin`) and multi-cluster jobs —
submit a `super-2` or `MultiClusterJob` document (YAML or JSON, the body bounded as every
other; 422 with field paths), list the caller's (an admin: all), read one with each copy's
cluster, remote id, states, times and why it was kept or cancelled, stop one (its owner or
an admin), and read the tail of its kept copy's log through that member.

A job's secrets go in and never come out: the answers carry no secret and no credential.
"""


from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from shoal.federation.members.contract import MAX_LOG_BYTES, MemberError
from shoal.federation.registry import ClusterEntry
from shoal.federation.service import Federation
from shoal.server.auth import Authenticator
from shoal.server.body import JSON_TYPES, YAML_TYPES, RawBody, raw_body
from shoal.server.errors import ApiError, ErrorItem, responses
from shoal.spec.errors import SpecError
from shoal.store import AlreadyExistsError, NotFoundError, User
from shoal.store.federation import McCopy, McJob

MAX_ERRORS = 50


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ClusterOut(_Out):
    alias: str
    uri: str
    kind: str
    gpu_type: str | None = Field(alias="gpuType")
    priority: int
    declared: str
    """`file` (the clusters file: read-only here) or `api` (an admin declared it)."""
    reachable: bool | None
    """None: not called yet."""
    last_error: str = Field(alias="lastError")
    retry_at: float | None = Field(alias="retryAt")


class McCopyOut(_Out):
    cluster: str
    round: int
    name: str
    remote_id: str | None = Field(alias="remoteId")
    state: str
    member_state: str = Field(alias="memberState")
    lost: bool
    intended_at: float = Field(alias="intendedAt")
    submitted_at: float | None = Field(alias="submittedAt")
    running_since: float | None = Field(alias="runningSince")
    ended_at: float | None = Field(alias="endedAt")
    verdict: str | None
    why: str
    cancel_requested_at: float | None = Field(alias="cancelRequestedAt")
    cancels_issued: int = Field(alias="cancelsIssued")
    last_error: str = Field(alias="lastError")


class McJobOut(_Out):
    name: str
    owner: str
    policy: str
    guard_time_running_s: float = Field(alias="guardTimeRunningS")
    time_scale_s: float = Field(alias="timeScaleS")
    retries: int
    round: int
    state: str
    kept: str | None
    reason: str
    submitted: float
    updated: float
    ended: float | None
    stop_requested: bool = Field(alias="stopRequested")
    copies: list[McCopyOut]


def copy_out(c: McCopy) -> McCopyOut:
    return McCopyOut(cluster=c.alias, round=c.round, name=c.name, remote_id=c.remote_id,
                     state=c.state.value, member_state=c.member_state, lost=c.lost,
                     intended_at=c.intended_at, submitted_at=c.submitted_at,
                     running_since=c.running_since, ended_at=c.ended_at,
                     verdict=None if c.verdict is None else c.verdict.value,
                     why=c.verdict_reason, cancel_requested_at=c.cancel_requested_at,
                     cancels_issued=c.cancels_issued, last_error=c.last_error)


def job_out(j: McJob) -> McJobOut:
    return McJobOut(name=j.name, owner=j.owner, policy=j.policy.value,
                    guard_time_running_s=j.guard_time_s, time_scale_s=j.time_scale_s,
                    retries=j.retries, round=j.round, state=j.state.value, kept=j.kept,
                    reason=j.reason, submitted=j.submitted, updated=j.updated, ended=j.ended,
                    stop_requested=j.stop_requested, copies=[copy_out(c) for c in j.copies])


def cluster_out(federation: Federation, entry: ClusterEntry) -> ClusterOut:
    """A member as any user may see it: never its credentials."""
    m = entry.member
    health = federation.dispatcher.health(m.alias)
    declared = "file" if federation.directory is None or federation.directory.in_file(m.alias) \
        else "api"
    return ClusterOut(alias=m.alias, uri=m.uri, kind=m.kind.value, gpu_type=m.gpu_type,
                      priority=m.priority, declared=declared, reachable=health.reachable,
                      last_error=health.last_error, retry_at=health.retry_at)


def multicluster_router(federation: Federation, current_user: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["multi-cluster"], responses=responses(401))

    def owned(name: str, user: User) -> McJob:
        try:
            job = federation.get(name)
        except NotFoundError:
            raise ApiError(404, f"no multi-cluster job {name!r}", "path.name") from None
        if not user.admin and job.owner != user.name:
            raise ApiError(403, f"multi-cluster job {name!r} belongs to {job.owner!r}, "
                                f"not to {user.name!r}")
        return job

    @router.get("/clusters", response_model=list[ClusterOut], response_model_by_alias=True)
    def clusters(_user: Annotated[User, Depends(current_user)]) -> list[ClusterOut]:
        return [cluster_out(federation, entry) for entry in federation.registry]

    @router.post("/multi-cluster-jobs", status_code=201, response_model=McJobOut,
                 response_model_by_alias=True, responses=responses(409, 413, 415, 422))
    def submit(user: Annotated[User, Depends(current_user)],
               body: Annotated[RawBody, Depends(raw_body)]) -> McJobOut:
        if user.job is not None:
            raise ApiError(403, "a job's token may not submit multi-cluster jobs")
        text = document_text(body, "a super-2 or MultiClusterJob document")
        try:
            job = federation.submit(text, user.name, limits=body.limits)
        except SpecError as exc:
            raise invalid("invalid multi-cluster job", exc) from None
        except AlreadyExistsError as exc:
            raise ApiError(409, str(exc), "name") from None
        return job_out(job)

    @router.get("/multi-cluster-jobs", response_model=list[McJobOut],
                response_model_by_alias=True)
    def list_jobs(user: Annotated[User, Depends(current_user)]) -> list[McJobOut]:
        return [job_out(j) for j in
                federation.records.list_jobs(None if user.admin else user.name)]

    @router.get("/multi-cluster-jobs/{name}", response_model=McJobOut,
                response_model_by_alias=True, responses=responses(403, 404))
    def get_job(name: str, user: Annotated[User, Depends(current_user)]) -> McJobOut:
        return job_out(owned(name, user))

    @router.post("/multi-cluster-jobs/{name}/stop", response_model=McJobOut,
                 response_model_by_alias=True, responses=responses(403, 404))
    def stop(name: str, user: Annotated[User, Depends(current_user)]) -> McJobOut:
        owned(name, user)
        return job_out(federation.stop(name))

    @router.get("/multi-cluster-jobs/{name}/logs", response_class=PlainTextResponse,
                responses=responses(403, 404, 502))
    async def logs(name: str, user: Annotated[User, Depends(current_user)],
                   limit: Annotated[int, Query(ge=1, le=MAX_LOG_BYTES)] = 64 * 1024
                   ) -> PlainTextResponse:
        await run_in_threadpool(owned, name, user)
        try:
            text = await run_in_threadpool(federation.dispatcher.logs, name,
                                           limit_bytes=limit)
        except LookupError as exc:
            raise ApiError(404, str(exc), "path.name") from None
        except MemberError as exc:
            raise ApiError(502, str(exc)) from None
        return PlainTextResponse(text.encode("utf-8")[-limit:].decode("utf-8", "ignore"))

    return router


def invalid(what: str, exc: SpecError) -> ApiError:
    """422 with every problem by field path (bounded)."""
    errors = [ErrorItem(path=i.path or "body", message=i.message[:1000])
              for i in exc.issues[:MAX_ERRORS]]
    return ApiError(422, what, errors=errors)


def document_text(body: RawBody, expected: str) -> str:
    """The body as text: YAML or JSON, UTF-8, not empty."""
    if body.content_type not in YAML_TYPES + JSON_TYPES:
        raise ApiError(415, f"unsupported content type {body.content_type or '(none)'!r}; "
                            "send application/yaml, text/yaml or application/json",
                       "header.Content-Type")
    try:
        text = body.data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "the body is not UTF-8", "body") from None
    if not text.strip():
        raise ApiError(422, f"the body is empty; expected {expected}", "body")
    return text
