"""A copy checked against its own format, and the roles derived from it: what a member that
takes commands (Slurm, Ray) needs to run the copy.

An OpenPAI copy is checked against the part of protocol v2 that OpenPAI's rest-server
enforces on task roles (`instances`, `resourcePerInstance {gpu, cpu, memoryMB}`, `commands`,
`dockerImage` naming a `dockerimage` prerequisite); its other top-level fields pass through
untouched, for OpenPAI itself to judge. A Shoal copy is loaded by Shoal's own loader, as a
running Shoal would load a submission, and its roles come from the loaded job.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictInt, StrictStr

from shoal.api.federation import RoleRequest
from shoal.spec.errors import SpecError, join_path
from shoal.spec.limits import Limits, Problem
from shoal.spec.multicluster import JobForm, MultiClusterJob
from shoal.spec.multicluster_fields import StrictModel
from shoal.spec.specialise import SpecialisedDocument, raise_problems, source_path

#: OpenPAI's task role names (rest-server: `^[a-zA-Z_][a-zA-Z0-9_]*$`).
ROLE_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
Count = Annotated[StrictInt, Field(ge=0, le=1 << 31)]


class PaiResources(StrictModel):
    gpu: Count
    cpu: Count
    memory_mb: Count = Field(alias="memoryMB")
    ports: dict[StrictStr, Count] | None = None


class PaiTaskRole(StrictModel):
    instances: Annotated[StrictInt, Field(ge=1, le=1 << 20)] = 1
    completion: dict[StrictStr, Any] | None = None
    task_retry_count: Count | None = Field(default=None, alias="taskRetryCount")
    prerequisites: list[StrictStr] | None = None
    docker_image: StrictStr = Field(alias="dockerImage")
    data: StrictStr | None = None
    output: StrictStr | None = None
    script: StrictStr | None = None
    extra_container_options: dict[StrictStr, Any] | None = Field(
        default=None, alias="extraContainerOptions")
    resource_per_instance: PaiResources = Field(alias="resourcePerInstance")
    commands: list[StrictStr] = Field(min_length=1, max_length=1024)


class PaiPrerequisite(StrictModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: StrictStr
    type: StrictStr
    uri: StrictStr | list[StrictStr] | None = None


class PaiJob(StrictModel):
    """The fields of an OpenPAI protocol v2 job that a copy's roles come from; the others
    pass through."""

    model_config = ConfigDict(extra="allow", frozen=True)
    protocol_version: StrictStr = Field(alias="protocolVersion")
    name: Annotated[StrictStr, Field(pattern=r"^[a-zA-Z0-9_-]+$", max_length=255)]
    prerequisites: list[PaiPrerequisite] = Field(default_factory=list, max_length=1024)
    task_roles: dict[Annotated[StrictStr, Field(pattern=ROLE_NAME_PATTERN)], PaiTaskRole] = (
        Field(alias="taskRoles", min_length=1, max_length=64))


def copy_roles(job: MultiClusterJob, copy: SpecialisedDocument, limits: Limits
               ) -> tuple[RoleRequest, ...]:
    """The roles of `copy`; raises SpecError (paths as written) when the copy is no valid
    job of its format."""
    if job.form is JobForm.SUPER_2:
        return _openpai_roles(job, copy)
    return _shoal_roles(job, copy, limits)


def _openpai_roles(job: MultiClusterJob, copy: SpecialisedDocument
                   ) -> tuple[RoleRequest, ...]:
    from pydantic import ValidationError

    from shoal.spec.messages import describe

    try:
        model = PaiJob.model_validate(copy.data())
    except ValidationError as exc:
        raise_problems(job, describe(PaiJob, exc))
        raise AssertionError("unreachable") from exc
    images = {p.name: p for p in model.prerequisites}
    problems: list[Problem] = []
    roles: list[RoleRequest] = []
    for name, role in model.task_roles.items():
        image = images.get(role.docker_image)
        if image is None or image.type != "dockerimage" or not isinstance(image.uri, str):
            problems.append((join_path(join_path("taskRoles", name), "dockerImage"),
                             f"must name a prerequisite of type dockerimage with a uri; "
                             f"declared: {', '.join(sorted(images)) or 'none'}"))
            continue
        resources = role.resource_per_instance
        roles.append(RoleRequest(name=name, instances=role.instances,
                                 commands=tuple(role.commands), gpu=resources.gpu,
                                 cpu=resources.cpu, memory_mib=resources.memory_mb,
                                 image=image.uri))
    raise_problems(job, problems)
    return tuple(roles)


def _shoal_roles(job: MultiClusterJob, copy: SpecialisedDocument, limits: Limits
                 ) -> tuple[RoleRequest, ...]:
    from shoal.spec.loader import load_json

    try:
        bundle = load_json(copy.document, job.source, limits=limits, launchable=True)
    except SpecError as exc:
        raise_problems(job, [(source_path(job.form, i.path), i.message) for i in exc.issues])
        raise AssertionError("unreachable") from exc
    (loaded,) = bundle.jobs
    return tuple(RoleRequest(name=group.name, instances=group.replicas,
                             commands=(shlex.join(group.command),) if group.command else (),
                             gpu=group.resources.gpu,
                             cpu=-(-group.resources.cpu // 1000),
                             memory_mib=group.resources.memory,
                             env=tuple(sorted(group.env.items())))
                 for group in loaded.groups)
