"""The cluster routes: nodes, virtual clusters, priority classes, resource flavors and users.

Reading nodes, virtual clusters, priority classes and resource flavors is open to every user
(they explain why jobs wait); changing them, and creating users, is for admins. They are
sent as `shoal/v1` documents, the same YAML as a cluster file.
"""

from collections.abc import Callable, Container, Iterable, Mapping
from typing import Annotated

from fastapi import APIRouter, Depends

from shoal.api import BUILTIN_PRIORITY_CLASSES, DEFAULT_QUEUE, ROOT_QUEUE, VirtualCluster
from shoal.api.objects import job_cluster
from shoal.core.vc_admission import vc_problem
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.audit import audit_note
from shoal.server.auth import Authenticator
from shoal.server.body import SPEC_BODY, RawBody, load_body, parse_json_body, raw_body
from shoal.server.errors import ApiError, responses
from shoal.server.models import (
    NewUserOut,
    NodeOut,
    PriorityClassOut,
    ResourceFlavorOut,
    UserIn,
    UserOut,
    VirtualClusterOut,
    VirtualClusterStatusOut,
    node_out,
    priority_class_out,
    resource_flavor_out,
    user_out,
    vc_out,
    vc_status_out,
)
from shoal.server.paging import MAX_LIST, After, Limit, page
from shoal.store import AlreadyExistsError, Repository, User
from shoal.store.nodes import READY, NodeRecord

USER_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": UserIn.model_json_schema()}}}}


def cluster_router(repository: Repository, current_user: Authenticator,
                   current_admin: Authenticator, catalog_changed: Callable[[], None],
                   statuses: Callable[[], Mapping[str, VirtualClusterStatus]]
                   ) -> APIRouter:
    """`catalog_changed` is called after virtual clusters or priority classes were stored;
    `statuses` says how every virtual cluster stands now (the scheduler's view; 503 when it
    does not answer in time)."""
    router = APIRouter(prefix="/api/v1", responses=responses(401))
    now = statuses
    body_dependency = Depends(raw_body)
    spec_errors = responses(403, 415, 422)

    # ---- nodes ----------------------------------------------------------------------------

    @router.get("/nodes", response_model=list[NodeOut], tags=["cluster"],
                responses=responses(422))
    def list_nodes(_user: Annotated[User, Depends(current_user)], limit: Limit = MAX_LIST,
                   after: After = None) -> list[NodeOut]:
        """The nodes by name, at most `limit` (`shoal.server.paging`), each with its state:
        Ready, NotReady (its engine says why) or Cordoned."""
        return [node_out(r) for r in page(repository.node_records(), lambda r: r.node.name,
                                          limit, after)]

    @router.put("/nodes", response_model=list[NodeOut], tags=["cluster"],
                openapi_extra=SPEC_BODY, responses=spec_errors)
    def put_nodes(admin: Annotated[User, Depends(current_admin)],
                  body: Annotated[RawBody, body_dependency]) -> list[NodeOut]:
        """Create or replace the nodes of the `Node` documents sent (`count` expands). A
        running `shoal up` keeps scheduling onto the nodes it was started with."""
        bundle = load_body(body, kind="Node")
        for node in bundle.nodes:
            repository.put_node(node, audit_note(admin, "node.put", node.name,
                                                 "schedulable" if node.schedulable
                                                 else "unschedulable"))
        # A node replaced keeps the condition its engine reported.
        conditions = {r.node.name: r.condition for r in repository.node_records()}
        return [node_out(NodeRecord(n, conditions.get(n.name, READY))) for n in bundle.nodes]

    # ---- virtual clusters -----------------------------------------------------------------

    @router.get("/cluster", response_model=VirtualClusterStatusOut, tags=["cluster"],
                responses=responses(503))
    def physical_cluster(user: Annotated[User, Depends(current_user)]
                         ) -> VirtualClusterStatusOut:
        """The physical cluster as the root of the virtual-cluster tree: its capacity, what
        is used and available, its top-level virtual clusters. Asked with a job's token (from
        a task), the cluster is the job's own virtual cluster — or its queue, for a job with
        none: seed 003's illusion of a cluster of its own."""
        status = now()
        if user.job is None:
            return vc_status_out(status[ROOT_QUEUE])
        job = repository.get_job(user.job)
        name = job_cluster(job) if job is not None else None
        if name is None or name not in status:
            raise ApiError(404, f"job {user.job!r} runs in no virtual cluster now")
        return vc_status_out(status[name])

    @router.get("/virtual-clusters", response_model=list[VirtualClusterOut], tags=["cluster"],
                responses=responses(422, 503))
    def list_virtual_clusters(_user: Annotated[User, Depends(current_user)],
                              limit: Limit = MAX_LIST, after: After = None
                              ) -> list[VirtualClusterOut]:
        """Every declared virtual cluster with its spec and its status now, then the
        job-scoped ones that exist now (`job:<job>`); at most `limit`."""
        status = now()
        chosen = page([*repository.list_virtual_clusters(), *_job_scoped(status)],
                      lambda vc: vc.name, limit, after)
        return [vc_out(vc, status.get(vc.name)) for vc in chosen]

    @router.get("/virtual-clusters/{name:path}", response_model=VirtualClusterOut,
                tags=["cluster"], responses=responses(404, 503))
    def get_virtual_cluster(name: str, _user: Annotated[User, Depends(current_user)]
                            ) -> VirtualClusterOut:
        """One virtual cluster (`default` and job-scoped ones included) with its spec and
        status: resources guaranteed, ceiling, used and available; parent and children; its
        virtual nodes; its jobs."""
        declared = {vc.name: vc for vc in repository.list_virtual_clusters()}
        status = now()
        vc = declared.get(name) or (VirtualCluster(DEFAULT_QUEUE) if name == DEFAULT_QUEUE
                                    else None)
        if vc is None and name in status:
            vc = next((v for v in _job_scoped({name: status[name]})), None)
        if vc is None:
            raise ApiError(404, f"no virtual cluster {name!r}", "path.name")
        return vc_out(vc, status.get(name))

    def _job_scoped(status: Mapping[str, VirtualClusterStatus]) -> list[VirtualCluster]:
        """The job-scoped virtual clusters (jobs' own and their sub-clusters) among those
        the scheduler has now, with the spec their job carries."""
        return [vc for vc in repository.job_virtual_clusters() if vc.name in status]

    @router.post("/virtual-clusters", status_code=201, response_model=list[VirtualClusterOut],
                 tags=["cluster"], openapi_extra=SPEC_BODY,
                 responses={**spec_errors, **responses(409)})
    def create_virtual_clusters(admin: Annotated[User, Depends(current_admin)],
                                body: Annotated[RawBody, body_dependency]
                                ) -> list[VirtualClusterOut]:
        """Create the virtual clusters of the `VirtualCluster` documents sent; parents may be
        stored ones or ones in the same body. Refused with 422 and the reason when the
        cluster could not honour them: guarantees beyond the parent's, or fixed-size
        virtual nodes that no node (or, for STRICT_SPREAD, too few nodes) could hold."""
        existing = {vc.name for vc in repository.list_virtual_clusters()}
        flavors = repository.list_resource_flavors()
        bundle = load_body(body, kind="VirtualCluster", known_queues=existing,
                           known_resource_flavors={f.name for f in flavors})
        refuse_existing((vc.name for vc in bundle.virtual_clusters), existing | {ROOT_QUEUE},
                        "virtual cluster")
        # With no nodes recorded yet the cluster is unknown: only the tree is judged.
        problem = vc_problem(bundle.virtual_clusters, repository.list_virtual_clusters(),
                             repository.list_nodes() or None, flavors)
        if problem:
            raise ApiError(422, f"virtual cluster {problem.name!r} cannot be honoured on this "
                                f"cluster: {problem.message}", problem.path)
        for vc in bundle.virtual_clusters:
            repository.put_virtual_cluster(vc, audit_note(admin, "vc.create", vc.name,
                                                          f"parent {vc.parent}"))
        catalog_changed()
        return [vc_out(vc) for vc in bundle.virtual_clusters]

    @router.put("/virtual-clusters/{name:path}", response_model=VirtualClusterOut,
                tags=["cluster"], openapi_extra=SPEC_BODY,
                responses={**spec_errors, **responses(404)})
    def replace_virtual_cluster(name: str, admin: Annotated[User, Depends(current_admin)],
                                body: Annotated[RawBody, body_dependency]
                                ) -> VirtualClusterOut:
        """Replace a stored virtual cluster with the one `VirtualCluster` document sent, of
        the same name: how a queue is closed or opened (`state`), reprioritised or given
        other quotas while the scheduler runs. The scheduler takes it up at its next turn:
        a closed one admits nothing new from then on, what runs in it runs on. Its parent
        stays (moving a subtree is deleting and creating it); refused with 422 like a
        creation when the cluster could not honour it, and when its own children would no
        longer fit in it: their guarantees beyond its new minimum
        (`spec.flexibleResourceMin`), or one beyond its new maximum
        (`spec.flexibleResourceMax`)."""
        stored = {vc.name: vc for vc in repository.list_virtual_clusters()}
        old = stored.get(name)
        if old is None:
            raise ApiError(404, f"no stored virtual cluster {name!r}", "path.name")
        flavors = repository.list_resource_flavors()
        bundle = load_body(body, kind="VirtualCluster", known_queues=set(stored),
                           known_resource_flavors={f.name for f in flavors})
        if len(bundle.virtual_clusters) != 1 or bundle.virtual_clusters[0].name != name:
            raise ApiError(422, f"send exactly one VirtualCluster document named {name!r}",
                           "metadata.name")
        [vc] = bundle.virtual_clusters
        if vc.parent != old.parent:
            raise ApiError(422, f"the parent of virtual cluster {name!r} is {old.parent!r} "
                                f"and cannot change (got {vc.parent!r})", "spec.parent")
        # Judged as a parent too: its stored children must still fit under its new
        # minimum and maximum (nothing is stored otherwise).
        others = [v for v in stored.values() if v.name != name]
        problem = vc_problem([vc], others, repository.list_nodes() or None, flavors)
        if problem:
            raise ApiError(422, f"virtual cluster {problem.name!r} cannot be honoured on this "
                                f"cluster: {problem.message}", problem.path)
        repository.put_virtual_cluster(vc, audit_note(admin, "vc.update", name,
                                                      f"state {vc.state.value}"))
        catalog_changed()
        return vc_out(vc)

    # ---- priority classes -----------------------------------------------------------------

    @router.get("/priority-classes", response_model=list[PriorityClassOut], tags=["cluster"],
                responses=responses(422))
    def list_priority_classes(_user: Annotated[User, Depends(current_user)],
                              limit: Limit = MAX_LIST, after: After = None
                              ) -> list[PriorityClassOut]:
        """The stored classes; the built-in ones apply where none of that name is stored.
        By value, at most `limit`."""
        stored = repository.list_priority_classes()
        names = {pc.name for pc in stored}
        effective = [*stored, *(pc for pc in BUILTIN_PRIORITY_CLASSES if pc.name not in names)]
        effective.sort(key=lambda pc: (pc.value, pc.name))
        return [priority_class_out(pc) for pc in page(effective, lambda pc: pc.name, limit,
                                                      after)]

    @router.post("/priority-classes", status_code=201, response_model=list[PriorityClassOut],
                 tags=["cluster"], openapi_extra=SPEC_BODY,
                 responses={**spec_errors, **responses(409)})
    def create_priority_classes(admin: Annotated[User, Depends(current_admin)],
                                body: Annotated[RawBody, body_dependency]
                                ) -> list[PriorityClassOut]:
        existing = {pc.name for pc in repository.list_priority_classes()}
        bundle = load_body(body, kind="PriorityClass")
        refuse_existing((pc.name for pc in bundle.priority_classes), existing,
                        "priority class")
        for pc in bundle.priority_classes:
            repository.put_priority_class(pc, audit_note(admin, "pc.create", pc.name,
                                                         f"value {pc.value}"))
        catalog_changed()
        return [priority_class_out(pc) for pc in bundle.priority_classes]

    # ---- resource flavors -----------------------------------------------------------------

    @router.get("/resource-flavors", response_model=list[ResourceFlavorOut], tags=["cluster"],
                responses=responses(422))
    def list_resource_flavors(_user: Annotated[User, Depends(current_user)],
                              limit: Limit = MAX_LIST, after: After = None
                              ) -> list[ResourceFlavorOut]:
        """The stored resource flavors (issue 16's node pools), by name, at most `limit`,
        each with how many nodes its labels match now."""
        nodes = repository.list_nodes()
        return [resource_flavor_out(f, nodes) for f in page(
            repository.list_resource_flavors(), lambda f: f.name, limit, after)]

    @router.post("/resource-flavors", status_code=201,
                 response_model=list[ResourceFlavorOut], tags=["cluster"],
                 openapi_extra=SPEC_BODY, responses={**spec_errors, **responses(409)})
    def create_resource_flavors(admin: Annotated[User, Depends(current_admin)],
                                body: Annotated[RawBody, body_dependency]
                                ) -> list[ResourceFlavorOut]:
        """Create the resource flavors of the `ResourceFlavor` documents sent; virtual
        clusters may then give quota on them. One whose labels match no node is fine."""
        existing = {f.name for f in repository.list_resource_flavors()}
        bundle = load_body(body, kind="ResourceFlavor")
        refuse_existing((f.name for f in bundle.resource_flavors), existing,
                        "resource flavor")
        for flavor in bundle.resource_flavors:
            repository.put_resource_flavor(flavor, audit_note(admin, "flavor.create",
                                                              flavor.name))
        catalog_changed()
        nodes = repository.list_nodes()
        return [resource_flavor_out(f, nodes) for f in bundle.resource_flavors]

    # ---- users ----------------------------------------------------------------------------

    @router.post("/users", status_code=201, response_model=NewUserOut, tags=["users"],
                 responses=responses(403, 409, 415, 422), openapi_extra=USER_BODY)
    def create_user(admin: Annotated[User, Depends(current_admin)],
                    body: Annotated[RawBody, Depends(raw_body)]) -> NewUserOut:
        """Create a user and issue their first token (returned here only)."""
        # The body is read raw and validated here, after the admin check: a declared body
        # model is decoded before any dependency runs, so a stranger's malformed JSON would
        # get a 422 that reveals the body's schema instead of a 401.
        user = parse_json_body(body, UserIn)
        try:
            created = repository.create_user(
                user.name, admin=user.admin, queues=user.queues,
                note=audit_note(admin, "user.create", user.name,
                                "admin" if user.admin else f"queues={','.join(user.queues)}"))
        except AlreadyExistsError as exc:
            raise ApiError(409, str(exc), "body.name") from None
        return NewUserOut(**user_out(created), token=repository.issue_token(created.name))

    @router.get("/users/me", response_model=UserOut, tags=["users"])
    def me(user: Annotated[User, Depends(current_user)]) -> UserOut:
        return UserOut(**user_out(user))

    return router


def refuse_existing(names: Iterable[str], existing: Container[str], what: str) -> None:
    """A creation never replaces: 409 on `metadata.name` for the first name already
    stored."""
    for name in names:
        if name in existing:
            raise ApiError(409, f"{what} {name!r} exists already", "metadata.name")
