"""Admins declare, change and remove the super scheduler's member clusters (issue 19):
`POST /api/v1/clusters` (a `kind: Cluster` document, YAML or JSON, its token in
`spec.credentials.token` — stored sealed), `PUT /api/v1/clusters/{alias}` (what changes:
uri, gpuType, priority, credentials; a token left out is kept), `DELETE
/api/v1/clusters/{alias}`. Others get 403. The answers are the member as `GET` shows it:
never a credential. The checks and the audit line are `shoal.federation.member_admin`'s.
"""

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Response

from shoal.federation.member_admin import FileMemberError, MemberInUseError
from shoal.federation.service import Federation
from shoal.server.auth import Authenticator
from shoal.server.body import RawBody, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.multicluster import ClusterOut, cluster_out, document_text, invalid
from shoal.spec.errors import SpecError
from shoal.store import AlreadyExistsError, NotFoundError, User

T = TypeVar("T")


def mc_admin_router(federation: Federation, current_admin: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["multi-cluster"], responses=responses(401, 403))
    admin = federation.admin
    assert admin is not None

    @router.post("/clusters", status_code=201, response_model=ClusterOut,
                 response_model_by_alias=True, responses=responses(409, 413, 415, 422))
    def add(user: Annotated[User, Depends(current_admin)],
            body: Annotated[RawBody, Depends(raw_body)]) -> ClusterOut:
        """Declare a member (admins)."""
        text = document_text(body, "a kind: Cluster document")
        entry = _checked(lambda: admin.add(text, user.name))
        federation.nudge()
        return cluster_out(federation, entry)

    @router.put("/clusters/{alias}", response_model=ClusterOut, response_model_by_alias=True,
                responses=responses(404, 409, 413, 415, 422))
    def change(alias: str, user: Annotated[User, Depends(current_admin)],
               body: Annotated[RawBody, Depends(raw_body)]) -> ClusterOut:
        """Change a member declared through the API (admins)."""
        text = document_text(body, "a mapping of what changes")
        entry = _checked(lambda: admin.change(alias, text, user.name))
        federation.nudge()
        return cluster_out(federation, entry)

    @router.delete("/clusters/{alias}", status_code=204, response_class=Response,
                   responses=responses(404, 409))
    def remove(alias: str, user: Annotated[User, Depends(current_admin)]) -> Response:
        """Remove a member declared through the API (admins); refused while a job that has
        not ended uses it."""
        _checked(lambda: admin.remove(alias, user.name))
        federation.nudge()
        return Response(status_code=204)

    return router


def _checked(action: Callable[[], T]) -> T:
    try:
        return action()
    except SpecError as exc:
        raise invalid("invalid cluster", exc) from None
    except NotFoundError as exc:
        raise ApiError(404, str(exc), "path.alias") from None
    except FileMemberError as exc:
        raise ApiError(409, str(exc), "path.alias") from None
    except AlreadyExistsError as exc:
        raise ApiError(409, str(exc), "metadata.name") from None
    except MemberInUseError as exc:
        raise ApiError(409, str(exc), "path.alias") from None
