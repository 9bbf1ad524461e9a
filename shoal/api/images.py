"""What an engine does with a task's container image (`TaskGroup.image`): `ImagePolicy`.

Jobs imported from Volcano, Kubernetes, OpenPAI or Sedna name the image their tasks run in.
Scheduling never reads it. An engine runs the command on the host as if no image were named
when the admin chose so (`shoal up --images=ignore`), and otherwise refuses the job at
submission, saying why: a job that silently ran on the host without the libraries its image
holds would fail late and obscurely. `shoal schedule` and `shoal sim` run nothing and accept
images.

No container runtime is offered yet: podman 4.3 (Debian 12) installs and imports a local
image here, but `podman run` fails in this sandbox (crun's setrlimit of RLIMIT_NPROC is
denied, even to the current limits), so a runtime could not be tested end to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light: `shoal up`'s signature reads ImagePolicy
    from shoal.api.objects import Job


class ImagePolicy(StrEnum):
    """`shoal up --images`."""

    REFUSE = "refuse"
    """A job that names an image is refused at submission (the default)."""
    IGNORE = "ignore"
    """The image is ignored: the command runs on the host, in the host's environment."""


@dataclass(frozen=True, slots=True)
class ImageProblem:
    """Why an engine refuses a job, at the path of its first image."""

    path: str
    message: str


def image_problem(job: Job, policy: ImagePolicy) -> ImageProblem | None:
    """Why an engine of this policy cannot run `job`; None when it can."""
    if policy is not ImagePolicy.REFUSE:
        return None
    for i, group in enumerate(job.groups):
        if group.image is not None:
            return ImageProblem(
                f"spec.taskGroups[{i}].image",
                f"task group {group.name!r} runs in image {group.image!r}, and this server "
                "runs no container images (`shoal up --images=refuse`, the default); leave "
                "the image out, or ask the admin for --images=ignore, which runs commands on "
                "the host")
    return None
