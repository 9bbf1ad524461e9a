"""The admin routes that change or delete what exists (issue 21): virtual clusters deleted
(or drained, then deleted by the control loop), priority classes replaced and deleted,
users listed, updated and deleted, their tokens issued and revoked. Admins only; each
change is checked as a creation is, made, and written to the audit log in one transaction
(`shoal.store.admin`). What refuses a change is a 409 naming why (the jobs not ended, the
child clusters).

Creating these, and replacing a virtual cluster, are `shoal.server.cluster`'s routes; nodes'
cordons and drains and jobs' priority classes are `shoal.server.node_admin`'s.
"""

from collections.abc import Callable, Mapping
from typing import Annotated

from fastapi import APIRouter, Depends, Response

from shoal.api import BUILTIN_PRIORITY_CLASSES
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.admin_models import RevokedOut, TokenOut, UserPatchIn
from shoal.server.audit import audit_note
from shoal.server.auth import Authenticator
from shoal.server.body import SPEC_BODY, RawBody, load_body, parse_json_body, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.models import (
    PriorityClassOut,
    UserOut,
    VirtualClusterOut,
    priority_class_out,
    user_out,
    vc_out,
)
from shoal.server.paging import MAX_LIST, After, Limit, page
from shoal.server.scheduler import Scheduler
from shoal.store import NotFoundError, Repository, User
from shoal.store.admin import AdminConflictError

PATCH_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": UserPatchIn.model_json_schema()}}}}


def admin_router(repository: Repository, scheduler: Scheduler, current_admin: Authenticator,
                 catalog_changed: Callable[[], None],
                 statuses: Callable[[], Mapping[str, VirtualClusterStatus]]) -> APIRouter:
    """`catalog_changed` is called after virtual clusters or priority classes changed;
    `statuses` is how every virtual cluster stands now (503 when the scheduler is stuck)."""
    router = APIRouter(prefix="/api/v1", responses=responses(401, 403))
    Admin = Annotated[User, Depends(current_admin)]  # noqa: N806 (a type alias)

    # ---- virtual clusters -----------------------------------------------------------------

    @router.delete("/virtual-clusters/{name:path}", status_code=204, tags=["cluster"],
                   responses={202: {"model": VirtualClusterOut,
                                    "description": "drain=true: closed, deleted once empty"},
                              **responses(404, 409, 503)}, response_model=None)
    def delete_virtual_cluster(name: str, admin: Admin, drain: bool = False
                               ) -> Response:
        """Delete a stored virtual cluster. Refused (409, naming them) while jobs that have
        not ended, or child clusters, are in it. With `drain=true` it is closed now (it
        admits nothing new; what is in it runs on) and the control loop deletes it once
        its last job has ended: 202 with the cluster as it is."""
        try:
            if drain:
                vc = scheduler.drain_virtual_cluster(name, audit_note(
                    admin, "vc.drain", name, "closed; deleted once its last job has ended"))
                status = statuses()
                return _accepted(vc_out(vc, status.get(name)))
            repository.delete_virtual_cluster(name, audit_note(admin, "vc.delete", name))
        except NotFoundError:
            raise ApiError(404, f"no stored virtual cluster {name!r}", "path.name") from None
        except AdminConflictError as exc:
            raise ApiError(409, str(exc), "path.name") from None
        catalog_changed()
        return Response(status_code=204)

    # ---- priority classes -----------------------------------------------------------------

    @router.put("/priority-classes/{name}", response_model=PriorityClassOut,
                tags=["cluster"], openapi_extra=SPEC_BODY,
                responses=responses(404, 415, 422))
    def replace_priority_class(name: str, admin: Admin,
                               body: Annotated[RawBody, Depends(raw_body)]
                               ) -> PriorityClassOut:
        """Replace a stored priority class with the one `PriorityClass` document sent, of
        the same name. Jobs of the class are ordered by its new value from the next cycle."""
        bundle = load_body(body, kind="PriorityClass")
        if len(bundle.priority_classes) != 1 or bundle.priority_classes[0].name != name:
            raise ApiError(422, f"send exactly one PriorityClass document named {name!r}",
                           "metadata.name")
        [pc] = bundle.priority_classes
        try:
            repository.replace_priority_class(pc, audit_note(
                admin, "pc.update", name, f"value {pc.value}, "
                f"preemptionPolicy {pc.preemption_policy.value}"))
        except NotFoundError:
            raise ApiError(404, f"no stored priority class {name!r} (create it with POST "
                                "/api/v1/priority-classes)", "path.name") from None
        catalog_changed()
        return priority_class_out(pc)

    @router.delete("/priority-classes/{name}", status_code=204, tags=["cluster"],
                   responses=responses(404, 409))
    def delete_priority_class(name: str, admin: Admin) -> Response:
        """Delete a stored priority class; refused (409) while jobs not ended use it. A
        built-in class of that name applies again."""
        try:
            repository.delete_priority_class(name, audit_note(admin, "pc.delete", name))
        except NotFoundError:
            raise ApiError(404, f"no stored priority class {name!r}", "path.name") from None
        except AdminConflictError as exc:
            raise ApiError(409, str(exc), "path.name") from None
        catalog_changed()
        return Response(status_code=204)

    # ---- users ----------------------------------------------------------------------------

    @router.get("/users", response_model=list[UserOut], tags=["users"],
                responses=responses(422))
    def list_users(_admin: Admin, limit: Limit = MAX_LIST, after: After = None
                   ) -> list[UserOut]:
        """Every user by name, at most `limit`."""
        return [UserOut(**user_out(u)) for u in page(repository.list_users(),
                                                     lambda u: u.name, limit, after)]

    @router.patch("/users/{name}", response_model=UserOut, tags=["users"],
                  responses=responses(404, 415, 422), openapi_extra=PATCH_BODY)
    def update_user(name: str, admin: Admin, body: Annotated[RawBody, Depends(raw_body)]
                    ) -> UserOut:
        """Change a user's admin flag and/or the queues they may submit to (replaced);
        their tokens carry the new rights at once."""
        patch = parse_json_body(body, UserPatchIn)
        changed = [f"admin={patch.admin}"] if patch.admin is not None else []
        if patch.queues is not None:
            changed.append(f"queues={','.join(patch.queues) or '-'}")
        try:
            user = repository.update_user(
                name, audit_note(admin, "user.update", name, " ".join(changed)),
                admin=patch.admin, queues=patch.queues)
        except NotFoundError:
            raise ApiError(404, f"no user {name!r}", "path.name") from None
        return UserOut(**user_out(user))

    @router.delete("/users/{name}", status_code=204, tags=["users"],
                   responses=responses(404, 409))
    def delete_user(name: str, admin: Admin) -> Response:
        """Delete a user: every token of theirs is revoked at once; their jobs are kept.
        An admin cannot delete themself (409)."""
        if name == admin.name:
            raise ApiError(409, "an admin cannot delete their own user", "path.name")
        try:
            repository.delete_user(name, audit_note(admin, "user.delete", name))
        except NotFoundError:
            raise ApiError(404, f"no user {name!r}", "path.name") from None
        return Response(status_code=204)

    @router.post("/users/{name}/tokens", status_code=201, response_model=TokenOut,
                 tags=["users"], responses=responses(404))
    def issue_token(name: str, admin: Admin) -> TokenOut:
        """Issue a new token for a user (returned here only; their others stay valid)."""
        try:
            token = repository.issue_user_token(name, audit_note(admin, "user.token.issue",
                                                                 name))
        except NotFoundError:
            raise ApiError(404, f"no user {name!r}", "path.name") from None
        return TokenOut(name=name, token=token)

    @router.delete("/users/{name}/tokens", response_model=RevokedOut, tags=["users"],
                   responses=responses(404))
    def revoke_tokens(name: str, admin: Admin) -> RevokedOut:
        """Revoke every token of a user's own (not those of their running jobs' tasks):
        a request with one is refused (401) from now on."""
        try:
            revoked = repository.revoke_user_tokens(name, audit_note(
                admin, "user.token.revoke", name))
        except NotFoundError:
            raise ApiError(404, f"no user {name!r}", "path.name") from None
        return RevokedOut(revoked=revoked)

    return router


def _accepted(vc: VirtualClusterOut) -> Response:
    return Response(vc.model_dump_json(by_alias=True), status_code=202,
                    media_type="application/json")


def known_priority_classes(repository: Repository) -> set[str]:
    """The classes a job may name: the stored ones and the built-in ones."""
    return ({pc.name for pc in repository.list_priority_classes()}
            | {pc.name for pc in BUILTIN_PRIORITY_CLASSES})
