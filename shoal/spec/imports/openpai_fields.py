"""The form of an OpenPAI protocol-v2 job (`protocolVersion: 2`), as OpenPAI's rest-server
enforces it (`src/rest-server/src/config/v2/protocol.js`: unknown fields refused at the top
level and in task roles), as pydantic models; and its Mustache templates (`<% $parameters.x
%>`), rendered the way the rest-server renders commands.

The resource and role-name rules are those Shoal already checks an OpenPAI copy of a
multi-cluster job against (`shoal.spec.specialise_roles`). One leniency: a task role may
leave `dockerImage` out, and then its commands run on the host.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr

from shoal.spec.errors import quote
from shoal.spec.multicluster_fields import StrictModel
from shoal.spec.specialise_roles import ROLE_NAME_PATTERN, PaiResources

MAX_ROLES = 64
MAX_COMMANDS = 1024
Name = Annotated[StrictStr, Field(max_length=255)]


class PaiAuth(StrictModel):
    username: StrictStr | None = None
    password: StrictStr | None = None
    registryuri: StrictStr | None = None


class PaiPrerequisiteSpec(StrictModel):
    name: Name
    type: Literal["dockerimage", "script", "output", "data"]
    uri: StrictStr | list[StrictStr]
    version: StrictStr | float | None = None
    contributor: StrictStr | None = None
    description: StrictStr | None = None
    plugin: StrictStr | None = None
    require: list[StrictStr] | None = None
    auth: PaiAuth | None = None


class PaiCompletion(StrictModel):
    min_failed_instances: StrictInt | None = Field(default=None, alias="minFailedInstances")
    min_succeeded_instances: StrictInt | None = Field(
        default=None, alias="minSucceededInstances")


class PaiContainerOptions(StrictModel):
    shm_mb: StrictInt | None = Field(default=None, alias="shmMB")
    infiniband: StrictBool | None = None


class PaiRole(StrictModel):
    instances: Annotated[StrictInt, Field(ge=1, le=1 << 20)] = 1
    completion: PaiCompletion | None = None
    task_retry_count: Annotated[StrictInt, Field(ge=0)] = Field(
        default=0, alias="taskRetryCount")
    prerequisites: list[Name] = Field(default_factory=list, max_length=64)
    docker_image: Name | None = Field(default=None, alias="dockerImage")
    data: Name | None = None
    output: Name | None = None
    script: Name | None = None
    extra_container_options: PaiContainerOptions | None = Field(
        default=None, alias="extraContainerOptions")
    resource_per_instance: PaiResources = Field(alias="resourcePerInstance")
    commands: list[StrictStr] = Field(min_length=1, max_length=MAX_COMMANDS)


class PaiRoleCommands(StrictModel):
    pre_commands: list[StrictStr] = Field(default_factory=list, alias="preCommands",
                                          max_length=MAX_COMMANDS)
    post_commands: list[StrictStr] = Field(default_factory=list, alias="postCommands",
                                           max_length=MAX_COMMANDS)


class PaiDeployment(StrictModel):
    name: Name
    task_roles: dict[StrictStr, PaiRoleCommands] = Field(alias="taskRoles")


class PaiDefaults(StrictModel):
    virtual_cluster: StrictStr | None = Field(default=None, alias="virtualCluster")
    deployment: StrictStr | None = None


class PaiJobSpec(StrictModel):
    """A protocol-v2 job, every top-level field the rest-server accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    protocol_version: Literal[2, "2"] = Field(alias="protocolVersion")
    name: Annotated[StrictStr, Field(pattern=r"^[a-zA-Z0-9_-]+$", max_length=255)]
    type: Literal["job"] = "job"
    version: StrictStr | float | None = None
    contributor: StrictStr | None = None
    description: StrictStr | None = None
    prerequisites: list[PaiPrerequisiteSpec] = Field(default_factory=list, max_length=256)
    parameters: dict[StrictStr, Any] = Field(default_factory=dict, max_length=256)
    secrets: Any = None
    job_retry_count: Annotated[StrictInt, Field(ge=0)] = Field(default=0,
                                                                alias="jobRetryCount")
    task_roles: dict[Annotated[StrictStr, Field(pattern=ROLE_NAME_PATTERN, max_length=63)],
                     PaiRole] = Field(alias="taskRoles", min_length=1, max_length=MAX_ROLES)
    deployments: list[PaiDeployment] = Field(default_factory=list, max_length=64)
    defaults: PaiDefaults = Field(default_factory=PaiDefaults)
    extras: dict[StrictStr, Any] = Field(default_factory=dict)


# ---- templates ----------------------------------------------------------------------------

#: `<% $parameters.lr %>`, `<% $data.uri[0] %>`: OpenPAI's delimiters, a root and a path.
TEMPLATE = re.compile(r"<%\s*(.*?)\s*%>", re.DOTALL)
_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+|\[\d{1,6}\])*)$")
_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d{1,6})\]")


class TemplateError(ValueError):
    """A placeholder that names nothing, or a secret."""


def render(text: str, context: Mapping[str, Any]) -> str:
    """`text` with every `<% $root.path %>` replaced by its value in `context` (keyed by root
    without `$`). Unlike OpenPAI, which leaves an unresolved placeholder as it is written, a
    placeholder that names nothing is refused: the command would run with `<% … %>` in it."""
    def value(match: re.Match[str]) -> str:
        reference = _REFERENCE.match(match.group(1))
        if reference is None:
            raise TemplateError(f"{quote(match.group(0))} is not a reference such as "
                                f"<% $parameters.name %>")
        root, path = reference.groups()
        if root == "secrets":
            raise TemplateError("secrets cannot be used in commands (OpenPAI leaves them "
                                "unrendered there, and Shoal keeps no secrets)")
        if root not in context:
            raise TemplateError(f"{quote(match.group(0))}: ${root} is not known; known: "
                                f"{', '.join('$' + k for k in context)}")
        found: Any = context[root]
        for step in _STEP.finditer(path):
            key, index = step.groups()
            if key is not None and isinstance(found, Mapping) and key in found:
                found = found[key]
            elif index is not None and isinstance(found, list) and int(index) < len(found):
                found = found[int(index)]
            else:
                raise TemplateError(f"{quote(match.group(0))} names nothing")
        if isinstance(found, Mapping | list) or found is None:
            raise TemplateError(f"{quote(match.group(0))} is not a single value")
        return json.dumps(found) if isinstance(found, bool) else str(found)
    return TEMPLATE.sub(value, text)
