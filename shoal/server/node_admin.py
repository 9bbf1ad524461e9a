"""Taking nodes out of service and changing a job's priority (issue 21):
`POST /api/v1/nodes/{name}/cordon|uncordon|drain` and `POST /api/v1/jobs/{name}/priority`.
Admins only; carried out by the control loop (`shoal.control.admin_ops`) once stored with
their audit entry.

A cordoned node takes no new task; what runs there runs on. A drained one is cordoned and
its tasks are evicted gracefully, as preemption evicts (the notice, SIGTERM, the grace
period), each once its job's `protectFor` has passed: their jobs go back to pending and run
elsewhere. An uncordon ends a drain. A job's new priority class (stored or built-in) takes
effect at the next cycle: it may then preempt, or be preempted, per the profile.
"""

from typing import Annotated

from fastapi import APIRouter, Depends

from shoal.server.admin import known_priority_classes
from shoal.server.admin_models import PriorityIn
from shoal.server.audit import audit_note
from shoal.server.auth import Authenticator
from shoal.server.body import RawBody, parse_json_body, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.job_models import JobOut, job_out
from shoal.server.models import NodeOut, node_out
from shoal.server.scheduler import Scheduler
from shoal.store import NotFoundError, Repository, User
from shoal.store.admin import AdminConflictError
from shoal.store.nodes import NodeRecord

PRIORITY_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": PriorityIn.model_json_schema(by_alias=True)}}}}
SCHEDULER_STUCK = "the scheduler did not answer in time; try again"


def node_admin_router(repository: Repository, scheduler: Scheduler,
                      current_admin: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1", responses=responses(401, 403, 404, 503))
    Admin = Annotated[User, Depends(current_admin)]  # noqa: N806 (a type alias)

    def serve(name: str, admin: User, verb: str, *, cordoned: bool, drain: bool = False
              ) -> NodeOut:
        detail = {"cordon": "no new tasks", "uncordon": "schedulable again",
                  "drain": "cordoned; its tasks evicted once unprotected"}[verb]
        try:
            record: NodeRecord = scheduler.set_node_service(
                name, audit_note(admin, f"node.{verb}", name, detail),
                cordoned=cordoned, drain=drain)
        except NotFoundError:
            raise ApiError(404, f"no node {name!r}", "path.name") from None
        except TimeoutError:
            raise ApiError(503, SCHEDULER_STUCK) from None
        return node_out(record)

    @router.post("/nodes/{name}/cordon", response_model=NodeOut, tags=["cluster"])
    def cordon_node(name: str, admin: Admin) -> NodeOut:
        """Cordon a node: nothing new is placed on it; what runs there runs on."""
        return serve(name, admin, "cordon", cordoned=True)

    @router.post("/nodes/{name}/uncordon", response_model=NodeOut, tags=["cluster"])
    def uncordon_node(name: str, admin: Admin) -> NodeOut:
        """Make a cordoned (or draining) node schedulable again; a drain stops."""
        return serve(name, admin, "uncordon", cordoned=False)

    @router.post("/nodes/{name}/drain", response_model=NodeOut, tags=["cluster"])
    def drain_node(name: str, admin: Admin) -> NodeOut:
        """Cordon a node and evict its tasks gracefully (notice, SIGTERM, grace period),
        each once its job's `protectFor` has passed; their jobs go back to pending and run
        elsewhere. `draining` is true until nothing is left on it."""
        return serve(name, admin, "drain", cordoned=True, drain=True)

    @router.post("/jobs/{name}/priority", response_model=JobOut, tags=["jobs"],
                 responses=responses(409, 415, 422), openapi_extra=PRIORITY_BODY)
    def set_priority(name: str, admin: Admin, body: Annotated[RawBody, Depends(raw_body)]
                     ) -> JobOut:
        """Give a pending or running job another priority class (a stored or built-in
        one); it takes effect at the next cycle, where the job may preempt or be
        preempted per the profile. A job that has ended → 409."""
        wanted = parse_json_body(body, PriorityIn).priority_class
        if wanted not in known_priority_classes(repository):
            raise ApiError(422, f"no priority class {wanted!r}", "body.priorityClass")
        before = repository.job_summary(name)
        if before is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        try:
            scheduler.set_priority(name, wanted, audit_note(
                admin, "job.set-priority", name,
                f"{before.job.priority_class or 'default'} -> {wanted}"))
        except NotFoundError:
            raise ApiError(404, f"no job {name!r}", "path.name") from None
        except AdminConflictError as exc:
            raise ApiError(409, str(exc), "path.name") from None
        except TimeoutError:
            raise ApiError(503, SCHEDULER_STUCK) from None
        after = repository.job_summary(name)
        if after is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        return job_out(after, scheduler.pending_reason(name))

    return router
