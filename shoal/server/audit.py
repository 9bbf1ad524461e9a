"""`GET /api/v1/audit`: the audit log of admin changes, newest first (admins only), and
`audit_note`, how the admin routes say what they change (`shoal.store.audit`)."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from shoal.server.admin_models import AuditPageOut, audit_entry_out
from shoal.server.auth import Authenticator
from shoal.server.errors import responses
from shoal.server.paging import MAX_LIST
from shoal.store import Repository, User
from shoal.store.audit import AuditNote

#: How many entries one page holds when `limit` is not given.
DEFAULT_AUDIT_PAGE = 100


def audit_note(user: User, action: str, target: str, detail: str = "") -> AuditNote:
    return AuditNote(actor=user.name, action=action, target=target, detail=detail)


def audit_router(repository: Repository, current_admin: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["audit"], responses=responses(401))

    @router.get("/audit", response_model=AuditPageOut, responses=responses(403, 422))
    def audit_log(_admin: Annotated[User, Depends(current_admin)],
                  limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = DEFAULT_AUDIT_PAGE,
                  after: Annotated[int | None, Query(
                      ge=0, le=2**31 - 1,  # the log's ids are 32-bit on PostgreSQL
                      description="The `next` of the previous page: older entries "
                                        "than this one.")] = None,
                  actor: Annotated[str | None, Query(max_length=253)] = None,
                  action: Annotated[str | None, Query(
                      max_length=64, description="An action (`node.drain`), or every "
                                                 "action under a prefix ending in `.` "
                                                 "(`user.`).")] = None
                  ) -> AuditPageOut:
        """Who changed what, and when: every admin change (virtual clusters, priority
        classes, resource flavors, users and their tokens, nodes, jobs' priority), newest
        first, at most `limit`; `actor` and `action` filter it."""
        entries = repository.audit_entries(limit, before=after, actor=actor, action=action)
        return AuditPageOut(items=[audit_entry_out(e) for e in entries],
                            next=entries[-1].id if len(entries) == limit else None)

    return router
