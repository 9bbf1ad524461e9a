"""What makes a job impossible to start, whatever the cluster: a task group without a
command, a NUL byte where the operating system takes C strings (command, arguments,
environment, working directory), an environment name that is empty or holds `=`.

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

_NUL = "\0"


def launch_problems(model: JobDocument) -> list[Problem]:
    """Every reason a task of `model` could never be started, as (path, message)."""
    return [problem for i, group in enumerate(model.spec.task_groups)
            for problem in _group(f"spec.taskGroups[{i}]", group)]


def _group(path: str, group: TaskGroupSpec) -> Iterator[Problem]:
    if not group.command:
        yield (f"{path}.command", "must name the program to run: a task group without a "
                                  "command can never start")
    for a, arg in enumerate(group.command):
        if _NUL in arg:
            yield (f"{path}.command[{a}]", f"must not hold a NUL byte, got {quote(arg)}")
    if group.command and not group.command[0]:
        yield (f"{path}.command[0]", "must name the program to run, got an empty string")
    for name, value in group.env.items():
        where = join_path(f"{path}.env", name)
        if not name:
            yield (f"{path}.env", "an environment variable needs a name, got an empty one")
        elif "=" in name or _NUL in name:
            yield (where, f"an environment variable's name must hold no '=' and no NUL byte, "
                          f"got {quote(name)}")
        if _NUL in value:
            yield (where, f"must not hold a NUL byte, got {quote(value)}")
    if group.working_dir is not None:
        if _NUL in group.working_dir:
            yield (f"{path}.workingDir", f"must not hold a NUL byte, got "
                                         f"{quote(group.working_dir)}")
        elif not group.working_dir:
            yield (f"{path}.workingDir", "must be a directory, got an empty string")
