"""Authentication and authorisation: `Authorization: Bearer <token>` resolved through the
store to a `User`; no or unknown token → 401, a user without the right → 403.

The rules: admins may do everything; a user submits into the queues listed for them
(`User.queues`), reads every job, and cancels only their own. A job's token (its tasks',
`shoal.store.accounts`) acts as the job's user without admin rights, and may also submit
into the job's own virtual cluster and its sub-clusters and create sub-clusters there; no
other job's.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from shoal.api import Job
from shoal.api.objects import job_of_virtual_cluster
from shoal.server.errors import ApiError
from shoal.store import Repository, User

bearer = HTTPBearer(auto_error=False, description="A token issued by `POST /api/v1/users`.")

UNAUTHENTICATED = {"WWW-Authenticate": "Bearer"}

Authenticator = Callable[..., Awaitable[User]]


def authenticator(repository: Repository) -> tuple[Authenticator, Authenticator]:
    """Two dependencies: the authenticated user, and the authenticated admin."""

    # Async on purpose: the lookup is a cache hit almost always (`Repository.authenticate`),
    # and a sync dependency costs every request a hop through the thread pool.
    async def current_user(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                                  Depends(bearer)]) -> User:
        return user_of(repository, credentials)

    async def current_admin(user: Annotated[User, Depends(current_user)]) -> User:
        if not user.admin:
            raise ApiError(403, f"user {user.name!r} is not an admin")
        return user

    return current_user, current_admin


def request_authenticator(repository: Repository) -> Callable[[Request], Awaitable[User]]:
    """The user of a request, as the `current_user` dependency finds it, for a route that
    reads its request itself (`shoal.server.direct`)."""

    async def request_user(request: Request) -> User:
        return user_of_token(repository, bearer_token(request))

    return request_user


def bearer_token(request: Request) -> str | None:
    """The token of the request's `Authorization: Bearer` header, read as `bearer` reads it
    (None where it gives no credentials), without building its credentials model."""
    authorization = request.headers.get("Authorization")
    scheme, token = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and token) or scheme.lower() != "bearer":
        return None
    return token


def user_of(repository: Repository, credentials: HTTPAuthorizationCredentials | None) -> User:
    """The user whose token `credentials` carries; 401 for none, another scheme, or a token
    that is unknown or revoked."""
    return user_of_token(repository, None if credentials is None
                         or credentials.scheme.lower() != "bearer"
                         else credentials.credentials)


def user_of_token(repository: Repository, token: str | None) -> User:
    """`user_of` for the bearer token itself."""
    if token is None:
        raise ApiError(401, "missing bearer token", "header.Authorization",
                       headers=UNAUTHENTICATED)
    user = repository.authenticate(token)
    if user is None:
        raise ApiError(401, "invalid or revoked token", "header.Authorization",
                       headers=UNAUTHENTICATED)
    return user


def check_queue(user: User, queue: str) -> None:
    if user.job is not None and job_of_virtual_cluster(queue) == user.job:
        return
    if not user.admin and queue not in user.queues:
        allowed = ", ".join(user.queues) or "none"
        raise ApiError(403, f"user {user.name!r} may not submit to queue {queue!r} "
                            f"(allowed: {allowed})", "spec.queue")


def check_job_scope(user: User, job: Job) -> None:
    """May `user` manage `job`'s own virtual cluster: its token, its owner, an admin."""
    if user.job is not None:
        if user.job != job.name:
            raise ApiError(403, f"the token of job {user.job!r} may not manage job "
                                f"{job.name!r}'s virtual cluster")
        return
    check_owner(user, job)


def check_owner(user: User, job: Job) -> None:
    if not user.admin and job.user != user.name:
        raise ApiError(403, f"job {job.name!r} belongs to {job.user!r}, not to {user.name!r}")
