"""`GET /api/v1/placements`: what holds each node now — every task bound to a node, with
its GPU indices, job, user and queue. Open to every user, like the nodes and the jobs list
(they explain why jobs wait); the dashboard's nodes page draws each GPU with its holder."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from shoal.server.auth import Authenticator
from shoal.server.errors import responses
from shoal.server.paging import MAX_LIST, After, Limit, page
from shoal.store import Repository, User
from shoal.store.placements import Placement, placements


class PlacementOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(description="`NODE/JOB/TASK`: what `after` takes for the next page.")
    node: str
    job: str
    task: str = Field(description="`GROUP-INDEX`, as a job's tasks are named.")
    state: str
    gpus: list[int] = Field(description="The node's GPU indices the task holds.")
    user: str | None
    queue: str
    start_time: float | None = Field(alias="startTime")


def _name(p: Placement) -> str:
    return f"{p.node}/{p.job}/{p.group}-{p.index}"


def placement_out(p: Placement) -> PlacementOut:
    return PlacementOut(name=_name(p), node=p.node, job=p.job, task=f"{p.group}-{p.index}",
                        state=p.state.value, gpus=list(p.gpus), user=p.user, queue=p.queue,
                        start_time=p.started)


def placements_router(repository: Repository, current_user: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["cluster"], responses=responses(401))

    @router.get("/placements", response_model=list[PlacementOut], responses=responses(422))
    def list_placements(_user: Annotated[User, Depends(current_user)],
                        node: Annotated[str | None, Query(
                            max_length=600, description="Only the tasks on this node")] = None,
                        limit: Limit = MAX_LIST, after: After = None) -> list[PlacementOut]:
        """The tasks that hold a node now (bound, running or still stopping), by node, job
        and task: what holds each GPU. At most `limit`; `after` is the last one's `name`."""
        return [placement_out(p) for p in page(placements(repository.store, node), _name,
                                               limit, after)]

    return router
