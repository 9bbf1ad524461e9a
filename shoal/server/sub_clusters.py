"""A job's own virtual cluster seen from the inside (seed 003): the sub-clusters its tasks
create in it, and the cluster a task sees.

`POST /api/v1/jobs/{name}/virtual-clusters` creates sub-clusters of the job's own virtual
cluster (`spec.virtualCluster`), all or none. The body is `VirtualCluster` documents whose
`metadata.name` is the sub-cluster's name *within the job* — it is stored as
`job:<job>/<name>` (`sub_cluster_name`), the name to submit work into (`spec.queue`) — and
whose `spec.parent` is `root`, meaning the job's own virtual cluster (the root of the job's
world, as seed 003's job sees it), or another of the job's sub-clusters. A task calls it with
its job token (`SHOAL_TOKEN`); the job's owner and admins may too.

What is refused, with the reason: a job that has ended (409), has no virtual cluster of its
own or whose own is not created yet (409); a name taken (409); guaranteed minimums that add
up to more than their parent guarantees — the job's own flexible minimum, at the top (422);
and `fixedSizeNodes` (422): a sub-cluster's fixed-size nodes would have to be carved out of
the job's own virtual nodes, and Shoal carves physical nodes only. Work that needs the
job's fixed-size nodes is submitted into the job's own virtual cluster (`job:<job>`).

A sub-cluster lives as long as its job: when the job ends (or is retried), the jobs
submitted into its virtual clusters are stopped and the clusters removed
(`shoal.control.job_scope`).

`GET /api/v1/jobs/{name}/virtual-clusters` lists the job's own virtual cluster and its
sub-clusters with their status now.
"""

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Depends

from shoal.api import ROOT_QUEUE, Job, VirtualCluster
from shoal.api.objects import job_virtual_cluster, sub_cluster_name
from shoal.core.vc_admission import vc_problem
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.auth import Authenticator, check_job_scope
from shoal.server.body import SPEC_BODY, RawBody, load_body, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.models import VirtualClusterOut, vc_out
from shoal.server.paging import MAX_LIST, After, Limit, page
from shoal.server.scheduler import Scheduler
from shoal.store import AlreadyExistsError, NotFoundError, Repository, StoreError, User


def sub_clusters_router(repository: Repository, scheduler: Scheduler,
                        current_user: Authenticator,
                        statuses: Callable[[], Mapping[str, VirtualClusterStatus]]
                        ) -> APIRouter:
    """`statuses`: every virtual cluster as the scheduler sees it now (503 on a timeout)."""
    router = APIRouter(prefix="/api/v1/jobs", tags=["virtual clusters of a job"],
                       responses=responses(401, 404, 503))

    def live_job(name: str) -> Job:
        job = repository.get_job(name)
        if job is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        return job

    @router.get("/{name}/virtual-clusters", response_model=list[VirtualClusterOut],
                responses=responses(422))
    def list_job_virtual_clusters(name: str, _user: Annotated[User, Depends(current_user)],
                                  limit: Limit = MAX_LIST, after: After = None
                                  ) -> list[VirtualClusterOut]:
        """The job's own virtual cluster, then its sub-clusters, with their status now
        (none for a job that has ended: they are gone); at most `limit`."""
        live_job(name)
        status = statuses()
        return [vc_out(vc, status.get(vc.name)) for vc in page(
            repository.job_virtual_clusters(name), lambda vc: vc.name, limit, after)]

    @router.post("/{name}/virtual-clusters", status_code=201,
                 response_model=list[VirtualClusterOut], openapi_extra=SPEC_BODY,
                 responses=responses(403, 409, 415, 422))
    def create_sub_clusters(name: str, user: Annotated[User, Depends(current_user)],
                            body: Annotated[RawBody, Depends(raw_body)]
                            ) -> list[VirtualClusterOut]:
        """Create sub-clusters of the job's own virtual cluster; see the module's text."""
        job = name
        owner = live_job(job)
        check_job_scope(user, owner)
        own = job_virtual_cluster(job)
        if owner.state.terminal:
            raise ApiError(409, f"job {job!r} has ended ({owner.state.value}): its virtual "
                                "cluster is gone", "path.name")
        if owner.virtual_cluster is None:
            raise ApiError(409, f"job {job!r} has no virtual cluster of its own; give it "
                                "spec.virtualCluster to create sub-clusters in it", "path.name")
        if own not in statuses():
            raise ApiError(409, f"job {job!r}'s virtual cluster is not created yet (the job "
                                "waits for its queue to guarantee it)", "path.name")
        existing = {sub.name.rsplit("/", 1)[1] for sub in owner.sub_clusters}
        bundle = load_body(body, kind="VirtualCluster", known_queues=existing)
        new = [_scoped(job, vc) for vc in bundle.virtual_clusters]
        nodes = repository.list_nodes()
        # The job's own is judged on its flexible part: sub-clusters never get its
        # fixed-size nodes, which were carved when it was created.
        stored = [replace(owner.virtual_cluster, fixed_size_nodes=(), reservation=None),
                  *owner.sub_clusters]
        problem = vc_problem(new, stored, nodes)
        if problem:
            raise ApiError(422, f"sub-cluster {problem.name!r} cannot be honoured in "
                                f"{own!r}: {problem.message}", problem.path)
        try:
            scheduler.add_sub_clusters(job, new)
        except AlreadyExistsError as exc:
            raise ApiError(409, str(exc), "metadata.name") from None
        except NotFoundError:
            raise ApiError(404, f"no job {job!r}", "path.name") from None
        except StoreError as exc:
            raise ApiError(409, str(exc), "path.name") from None
        return [vc_out(vc) for vc in new]

    return router


def _scoped(job: str, vc: VirtualCluster) -> VirtualCluster:
    """A sub-cluster document as the job's: named within the job, `root` its own cluster."""
    if vc.fixed_size_nodes:
        raise ApiError(422, f"sub-cluster {vc.name!r}: a sub-cluster has flexible resources "
                            "only; its fixed-size nodes would have to be carved out of the "
                            f"job's own virtual nodes. Submit into {job_virtual_cluster(job)!r} "
                            "to use those", "spec.fixedSizeNodes")
    parent = (job_virtual_cluster(job) if vc.parent == ROOT_QUEUE
              else sub_cluster_name(job, vc.parent))
    return replace(vc, name=sub_cluster_name(job, vc.name), parent=parent)
