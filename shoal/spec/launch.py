"""What makes a job impossible to start, whatever the cluster: a task group without a
command (or with an empty program name), an environment variable whose name is empty or
holds `=`, an empty working directory. (A NUL byte, which no argument, environment entry or
path may hold either, is refused in every string of a spec while reading it:
`shoal.spec.reading`.)

Such a job would be admitted, placed, and then fail in its launch, holding its resources
meanwhile; a running Shoal refuses it at submission instead, under the field's path. A
scenario or trace only schedules and may leave its commands out, so the loader applies
these checks only when asked (`launchable=True`).
"""

from __future__ import annotations

from collections.abc import Iterator

from shoal.spec.documents import JobDocument, TaskGroupSpec
from shoal.spec.errors import join_path, quote
from shoal.spec.limits import Problem


def launch_problems(model: JobDocument) -> list[Problem]:
    """Every reason a task of `model` could never be started, as (path, message)."""
    return [problem for i, group in enumerate(model.spec.task_groups)
            for problem in _group(f"spec.taskGroups[{i}]", group)]


def _group(path: str, group: TaskGroupSpec) -> Iterator[Problem]:
    if not group.command:
        yield (f"{path}.command", "must name the program to run: a task group without a "
                                  "command can never start")
    elif not group.command[0]:
        yield (f"{path}.command[0]", "must name the program to run, got an empty string")
    for name in group.env:
        if not name:
            yield (f"{path}.env", "an environment variable needs a name, got an empty one")
        elif "=" in name:
            yield (join_path(f"{path}.env", name),
                   f"an environment variable's name must not hold '=', got {quote(name)}")
    if group.working_dir is not None and not group.working_dir:
        yield (f"{path}.workingDir", "must be a directory, got an empty string")
