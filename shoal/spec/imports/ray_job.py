"""A Ray job submission (the JSON body of Ray's `POST /api/jobs/`, or the same as YAML)
lowered to one native Job of one task, `driver`, which runs the entrypoint with `sh -c` (as
Ray's job supervisor does).

Claimed when a document has no `apiVersion` and a string `entrypoint`. `submission_id` (or
the deprecated `job_id`) is the job's name; `entrypoint_num_cpus`, `entrypoint_num_gpus`
(whole GPUs), `entrypoint_memory` (bytes) and `entrypoint_resources` (whole counts; Ray's
`accelerator_type:X` becomes the node selector `gpu-type: X`) its resources, 1 CPU when it
names none (Ray reserves nothing for a driver, but a Shoal task with no request at all is
best-effort); `entrypoint_label_selector` its node selector; `runtime_env.env_vars` its
environment, `runtime_env.working_dir` (a local path only: nothing is uploaded) its working
directory, `runtime_env.image_uri` its image; `metadata` its annotations.

Refused, with why: the runtime-env fields that build or fetch an environment (`pip`,
`conda`, `uv`, `py_modules`, a remote `working_dir`, ...: Shoal builds none), and anything
else Ray's API does not name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, StrictInt, StrictStr

from shoal.api import GPU_TYPE_LABEL
from shoal.spec.document_types import Number
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, lower_each
from shoal.spec.messages import validated
from shoal.spec.multicluster_fields import StrictModel

GROUP = "driver"
ACCELERATOR_PREFIX = "accelerator_type:"
ANNOTATION_PREFIX = "ray.io/"
#: runtime_env fields that build, fetch or configure an environment Shoal does not.
BUILDS = {
    "pip": "Shoal installs no packages; install them on the nodes or use image_uri",
    "conda": "Shoal creates no conda environments; create it on the nodes or use image_uri",
    "uv": "Shoal installs no packages; install them on the nodes or use image_uri",
    "py_modules": "Shoal uploads no modules; put them on the nodes or in the image",
    "excludes": "nothing is uploaded, so there is nothing to exclude",
    "container": "give the image as image_uri",
    "py_executable": "put the interpreter in the entrypoint instead",
    "java_jars": "Shoal fetches no jars",
    "nsight": "Shoal runs no profilers",
    "config": "Shoal has no runtime-env setup to time out",
}
_URI = ("://", ".zip", ".whl")


class RayRuntimeEnv(StrictModel):
    model_config = StrictModel.model_config | {"extra": "allow"}
    env_vars: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    working_dir: StrictStr | None = None
    image_uri: Annotated[StrictStr, Field(min_length=1, max_length=512)] | None = None


class RayJobSubmission(StrictModel):
    """The body of `POST /api/jobs/` (Ray 2.x)."""

    entrypoint: Annotated[StrictStr, Field(min_length=1)]
    submission_id: StrictStr | None = None
    job_id: StrictStr | None = None
    runtime_env: RayRuntimeEnv = Field(default_factory=RayRuntimeEnv)
    metadata: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    entrypoint_num_cpus: Annotated[Number, Field(ge=0)] | None = None
    entrypoint_num_gpus: Annotated[Number, Field(ge=0)] | None = None
    entrypoint_memory: Annotated[StrictInt, Field(ge=0)] | None = None
    entrypoint_resources: dict[StrictStr, Annotated[Number, Field(ge=0)]] = Field(
        default_factory=dict)
    entrypoint_label_selector: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class RayJobImporter:
    """No `apiVersion`, a string `entrypoint`."""

    format = ImportFormat.RAY_JOB

    def claims(self, data: Any) -> bool:
        return isinstance(data, Mapping) and "apiVersion" not in data \
            and "protocolVersion" not in data and isinstance(data.get("entrypoint"), str)

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        return lower_each(log, docs, lower_ray_job)


def lower_ray_job(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> Lowered | None:
    """The native Job of one Ray job submission; None (after logging why) if it has none."""
    job = validated(log, doc, RayJobSubmission, data)
    if job is None:
        return None
    problems: list[tuple[str, str]] = []
    name_path = "submission_id" if job.submission_id is not None else "job_id"
    name = job.submission_id if job.submission_id is not None else job.job_id
    if name is None:
        problems.append(("submission_id", "required: a Shoal job needs a name (Ray makes one "
                                          "up; Shoal does not)"))
    group: dict[str, Any] = {"name": GROUP, "replicas": 1,
                             "resources": _resources(job, problems),
                             "command": ["/bin/sh", "-c", job.entrypoint]}
    selector = dict(job.entrypoint_label_selector)
    for key in job.entrypoint_resources:
        if key.startswith(ACCELERATOR_PREFIX):
            selector[GPU_TYPE_LABEL] = key[len(ACCELERATOR_PREFIX):]
    if selector:
        group["nodeSelector"] = selector
    _runtime_env(job.runtime_env, group, problems)
    for path, message in problems:
        log.add(doc, path, message)
    if problems:
        return None
    metadata: dict[str, Any] = {"name": name}
    if job.metadata:
        metadata["annotations"] = {f"{ANNOTATION_PREFIX}{k}": v
                                   for k, v in job.metadata.items()}
    document = {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata,
                "spec": {"taskGroups": [group]}}
    native = "spec.taskGroups[0]"
    paths = {"metadata.name": name_path, "metadata.annotations": "metadata",
             f"{native}.command": "entrypoint",
             f"{native}.resources.cpu": "entrypoint_num_cpus",
             f"{native}.resources.gpu": "entrypoint_num_gpus",
             f"{native}.resources.memory": "entrypoint_memory",
             f"{native}.resources": "entrypoint_resources",
             f"{native}.nodeSelector": "entrypoint_label_selector",
             f"{native}.env": "runtime_env.env_vars",
             f"{native}.workingDir": "runtime_env.working_dir",
             f"{native}.image": "runtime_env.image_uri"}
    return Lowered(doc, Original(ImportFormat.RAY_JOB, dict(data)), (document,), paths)


def _resources(job: RayJobSubmission, problems: list[tuple[str, str]]) -> dict[str, Any]:
    resources: dict[str, Any] = {"cpu": 1 if job.entrypoint_num_cpus is None
                                 else job.entrypoint_num_cpus}
    if job.entrypoint_num_gpus:
        if not float(job.entrypoint_num_gpus).is_integer():
            problems.append(("entrypoint_num_gpus", f"must be a whole number: Shoal gives "
                             f"tasks whole GPUs, got {job.entrypoint_num_gpus}"))
        else:
            resources["gpu"] = int(job.entrypoint_num_gpus)
    if job.entrypoint_memory:
        resources["memory"] = job.entrypoint_memory
    for key, amount in job.entrypoint_resources.items():
        if key.startswith(ACCELERATOR_PREFIX):
            continue  # a marker of the node's accelerator: the node selector
        path = join_path("entrypoint_resources", key)
        if not math.isfinite(amount) or not float(amount).is_integer():
            problems.append((path, f"must be a whole number: Shoal counts named resources "
                                   f"in whole units, got {quote(amount)}"))
        elif amount:
            resources[key] = int(amount)
    return resources


def _runtime_env(env: RayRuntimeEnv, group: dict[str, Any],
                 problems: list[tuple[str, str]]) -> None:
    if env.env_vars:
        group["env"] = dict(env.env_vars)
    if env.working_dir is not None:
        if any(marker in env.working_dir for marker in _URI):
            problems.append(("runtime_env.working_dir", f"must be a directory on the nodes: "
                             f"Shoal uploads and fetches nothing, got "
                             f"{quote(env.working_dir)}"))
        else:
            group["workingDir"] = env.working_dir
    if env.image_uri is not None:
        group["image"] = env.image_uri
    for key in (env.model_extra or {}):
        why = BUILDS.get(key, "is not supported by Shoal; supported: env_vars, working_dir "
                              "(a local path), image_uri")
        problems.append((join_path("runtime_env", key), why))


RAY_JOB = RayJobImporter()
