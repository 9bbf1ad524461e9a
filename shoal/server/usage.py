"""`GET /api/v1/usage`: the usage report (issue 21) — resource-seconds of ended task
attempts by queue, user, GPU type, node or job over a span, wasted work apart. Open to
every user, as the cluster's catalog is."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from shoal.api.accounting import AccountingError, UsageQuery
from shoal.server.auth import Authenticator
from shoal.server.errors import ApiError, responses
from shoal.server.usage_models import UsageOut, usage_out
from shoal.store import Repository, User

_TIME = Query(max_length=64, description="ISO 8601 date or time (UTC without an offset).")


def usage_router(repository: Repository, current_user: Authenticator) -> APIRouter:
    """The span defaults to the week up to the repository's clock."""
    router = APIRouter(prefix="/api/v1", responses=responses(401))

    @router.get("/usage", response_model=UsageOut, response_model_exclude_none=True,
                tags=["usage"], responses=responses(422))
    def usage(_user: Annotated[User, Depends(current_user)],
              by: Annotated[str | None, Query(max_length=16, description=(
                  "queue | user | gpu-type | node | job (default queue)"))] = None,
              since: Annotated[str | None, _TIME] = None,
              until: Annotated[str | None, _TIME] = None,
              step: Annotated[str | None, Query(max_length=16, description=(
                  "none | hour | day: a series per row (default none)"))] = None) -> UsageOut:
        """Resource-seconds (GPU, CPU, memory) of the task attempts in [since, until)
        (default: the last 7 days; at most 400 days, 31 with step=hour), one row per key
        sorted by GPU-seconds, most first; preempted and failed attempts' GPU-seconds also
        apart, as wasted. An hour is the resolution: an hour partly in the span counts
        whole. A report by job reads the attempts of the last 90 days only."""
        try:
            query = UsageQuery.of(by, since, until, step, repository.clock())
        except AccountingError as exc:
            raise ApiError(422, exc.message, f"query.{exc.path}") from None
        return usage_out(repository.usage_report(query))

    return router
