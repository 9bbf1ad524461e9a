"""A Slurm batch script (`sbatch train.sbatch`) lowered to a native Job: `shoal submit
train.sbatch` runs it.

The `#SBATCH` header (`shoal.spec.imports.slurm_header`) becomes the job's request: one task
group `batch` of `nodes x ntasks-per-node` (or `ntasks`) tasks, a gang when there are
several, each task `cpus-per-task` CPUs, its share of the node's memory (`--mem`, per node)
or `mem-per-cpu x cpus`, and its share of the node's GPUs (`--gres=gpu[:type]:N`,
`--gpus-per-node`; `--gpus` per job, `--gpus-per-task`); a GPU type becomes the node
selector `gpu-type`. `-t` is `spec.timeLimit`, `-p` the queue, `-J` the name (else the
file's), `--qos` the priority class, `--dependency=afterok:` `spec.dependsOn`, `-H`
`spec.hold`, `--comment` an annotation, `--array` one job per index
(`shoal.spec.imports.arrays`), and `-o`/`-e` the files the tasks' output is appended to
(`%j`, `%x`, `%A`, `%a`, `%t`, ... filled in by the task). Every other option is refused
under its path (`#SBATCH --mail-user`) with why.

Each task runs the script itself (as `srun script` would), with the interpreter its `#!`
line names given the text with `-c`; a small `sh` prelude exports the per-task `SLURM_PROCID`,
`SLURM_LOCALID` and `SLURM_NODEID` from Shoal's rank, and the job-wide `SLURM_*` values are
in its environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from shoal.api import GPU_TYPE_LABEL
from shoal.spec.errors import DocRef, IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, lower_each
from shoal.spec.imports.arrays import (
    ArrayError,
    ArrayIndices,
    array_size_problem,
    element_name,
    expand_array,
    parse_array,
)
from shoal.spec.imports.slurm_header import (
    PREFIX,
    Directive,
    GpuRequest,
    HeaderError,
    directives,
    is_batch_script,
    parse_gpus,
    parse_gres,
    parse_memory,
    parse_time,
    shell_file_name,
)
from shoal.spec.limits import Limits

GROUP = "batch"
GROUP_PATH = "spec.taskGroups[0]"
SCRIPT_PATH = "script"
COMMENT_ANNOTATION = "slurm.schedmd.com/comment"

#: Sources that carry no file name (a request body, a string): the job needs `-J`.
NAMELESS_SOURCES = frozenset({"request", "<string>"})
#: Interpreters that run a program given as `-c TEXT`.
INTERPRETERS = ("sh", "bash", "dash", "zsh", "ksh", "python", "python3")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_NUMBER = re.compile(r"^\d{1,7}$")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")

#: Why each option Shoal does not honour is refused.
REFUSED = {
    "mail-user": "Shoal sends no mail; follow the job with `shoal get NAME` or "
                 "`shoal submit --wait`",
    "mail-type": "Shoal sends no mail; follow the job with `shoal get NAME` or "
                 "`shoal submit --wait`",
    "exclusive": "Shoal places tasks by what they request and never reserves whole nodes; "
                 "request the node's resources instead",
    "account": "Shoal charges usage to the submitting user and the job's queue (-p); there "
               "are no accounts",
    "nodelist": "Shoal chooses the nodes; a node selector is not expressible in a batch "
                "script",
    "exclude": "Shoal chooses the nodes; nodes cannot be excluded",
    "constraint": "node features are not known to Shoal; use --gres=gpu:TYPE:N for a GPU "
                  "type",
    "export": "Shoal does not carry the submitting shell's environment to tasks; set the "
              "variables in the script",
    "requeue": "Shoal restarts tasks by their retry count, not by requeueing batch jobs",
    "begin": "Shoal has no deferred start; hold the job (-H) and release it when due",
}


@dataclass
class _Request:
    """The header's values as read, before they are combined."""

    name: str | None = None
    nodes: int | None = None
    ntasks: int | None = None
    per_node: int | None = None
    cpus: int = 1
    mem_per_node: int | None = None
    mem_per_cpu: int | None = None
    gpus_node: GpuRequest | None = None
    gpus_job: GpuRequest | None = None
    gpus_task: GpuRequest | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    output: str | None = None
    error: str | None = None
    array: ArrayIndices | None = None
    paths: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


class SlurmBatchImporter:
    """A text whose first line is `#!`."""

    format = ImportFormat.SLURM_BATCH

    def claims(self, data: Any) -> bool:
        return isinstance(data, str) and is_batch_script(data)

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        return lower_each(log, docs, lower_script)


def script_documents(source: str, text: str, log: IssueLog, limits: Limits
                     ) -> Iterator[tuple[int, Any]]:
    """A batch script's text as the one document of its file (a `Reader`)."""
    yield 1, text


def lower_script(log: IssueLog, doc: DocRef, text: str) -> Lowered | None:
    """The native Job documents of one script; None (after logging why) if it has none."""
    try:
        header = directives(text)
    except HeaderError as exc:
        log.add(doc, PREFIX, str(exc))
        return None
    request = _Request()
    for directive in header:
        _apply(request, directive)
    interpreter = _interpreter(text, request)
    if request.name is None:
        request.name = _file_name(doc.source)
        request.paths["metadata.name"] = f"{PREFIX} --job-name"
        if request.name is None:
            request.problems.append((f"{PREFIX} --job-name", "required: the script was sent "
                                     "without a file name to name the job after"))
    document = None if request.problems or interpreter is None else _document(
        request, interpreter, text)
    for path, message in request.problems:
        log.add(doc, path, message)
    if document is None:
        return None
    documents: tuple[Mapping[str, Any], ...] = (document,)
    if request.array is not None:
        indices = request.array
        too_large = array_size_problem(document, indices)
        if too_large is not None:
            log.add(doc, f"{PREFIX} --array", too_large)
            return None
        documents = tuple(expand_array(document, indices,
                                       lambda i: _array_env(str(document["metadata"]["name"]),
                                                            indices, i)))
    return Lowered(doc, Original(ImportFormat.SLURM_BATCH, text), documents, request.paths)


def _apply(request: _Request, d: Directive) -> None:
    handler = _HANDLERS.get(d.option)
    if handler is None:
        why = REFUSED.get(d.option, f"is not supported by Shoal; supported: "
                                    f"{', '.join(sorted(_HANDLERS))}")
        request.problems.append((d.path, f"line {d.line}: {why}"))
        return
    if (d.value is None and d.option != "hold") or d.value == "":
        request.problems.append((d.path, f"line {d.line}: needs a value"))
        return
    try:
        handler(request, d)
    except (ValueError, ArrayError) as exc:
        request.problems.append((d.path, f"line {d.line}: {exc}"))


def _count(value: str | None, what: str) -> int:
    text = (value or "").strip()
    if not _NUMBER.match(text) or int(text) < 1:
        raise ValueError(f"must be a whole number of {what} of at least 1, got {quote(value)}")
    return int(text)


def _set_name(r: _Request, d: Directive) -> None:
    r.name = d.value
    r.paths["metadata.name"] = d.path


def _set_nodes(r: _Request, d: Directive) -> None:
    if d.value is not None and "-" in d.value:
        raise ValueError(f"a range of nodes is not supported by Shoal, whose jobs have one "
                         f"size; give one number, got {quote(d.value)}")
    r.nodes = _count(d.value, "nodes")


def _set_ntasks(r: _Request, d: Directive) -> None:
    r.ntasks = _count(d.value, "tasks")
    r.paths[f"{GROUP_PATH}.replicas"] = d.path


def _set_per_node(r: _Request, d: Directive) -> None:
    r.per_node = _count(d.value, "tasks")
    r.paths.setdefault(f"{GROUP_PATH}.replicas", d.path)


def _set_cpus(r: _Request, d: Directive) -> None:
    r.cpus = _count(d.value, "CPUs")
    r.paths[f"{GROUP_PATH}.resources.cpu"] = d.path


def _set_mem(r: _Request, d: Directive) -> None:
    r.mem_per_node = parse_memory(d.value or "")
    r.paths[f"{GROUP_PATH}.resources.memory"] = d.path


def _set_mem_per_cpu(r: _Request, d: Directive) -> None:
    r.mem_per_cpu = parse_memory(d.value or "")
    r.paths[f"{GROUP_PATH}.resources.memory"] = d.path


def _gpus(r: _Request, d: Directive, request: GpuRequest, slot: str) -> None:
    setattr(r, slot, request)
    r.paths[f"{GROUP_PATH}.resources.gpu"] = d.path
    r.paths[f"{GROUP_PATH}.nodeSelector"] = d.path


def _set_gres(r: _Request, d: Directive) -> None:
    _gpus(r, d, parse_gres(d.value or ""), "gpus_node")


def _set_gpus_per_node(r: _Request, d: Directive) -> None:
    _gpus(r, d, parse_gpus(d.value or ""), "gpus_node")


def _set_gpus(r: _Request, d: Directive) -> None:
    _gpus(r, d, parse_gpus(d.value or ""), "gpus_job")


def _set_gpus_per_task(r: _Request, d: Directive) -> None:
    _gpus(r, d, parse_gpus(d.value or ""), "gpus_task")


def _set_time(r: _Request, d: Directive) -> None:
    seconds = parse_time(d.value or "")
    if seconds is None:
        r.spec.pop("timeLimit", None)
    else:
        r.spec["timeLimit"] = seconds
    r.paths["spec.timeLimit"] = d.path


def _set_partition(r: _Request, d: Directive) -> None:
    if "," in (d.value or ""):
        raise ValueError(f"one partition only: a Shoal job waits in one queue, got "
                         f"{quote(d.value)}")
    r.spec["queue"] = d.value
    r.paths["spec.queue"] = d.path


def _set_qos(r: _Request, d: Directive) -> None:
    r.spec["priorityClassName"] = d.value
    r.paths["spec.priorityClassName"] = d.path


def _set_dependency(r: _Request, d: Directive) -> None:
    text = d.value or ""
    if "?" in text:
        raise ValueError("'?' (any one of the conditions) is not supported: Shoal's "
                         "dependencies must all hold")
    names: list[str] = []
    for condition in text.split(","):
        kind, _, jobs = condition.strip().partition(":")
        if kind != "afterok" or not jobs:
            raise ValueError(f"only afterok:JOB[:JOB...] is supported (the job starts once "
                             f"those jobs have succeeded, and is cancelled if one ends "
                             f"otherwise), got {quote(condition.strip())}")
        names += [job.partition("+")[0] for job in jobs.split(":")]
    r.spec["dependsOn"] = names
    r.paths["spec.dependsOn"] = d.path


def _set_hold(r: _Request, d: Directive) -> None:
    r.spec["hold"] = True


def _set_comment(r: _Request, d: Directive) -> None:
    r.annotations[COMMENT_ANNOTATION] = d.value or ""
    r.paths["metadata.annotations"] = d.path


def _set_chdir(r: _Request, d: Directive) -> None:
    r.working_dir = d.value
    r.paths[f"{GROUP_PATH}.workingDir"] = d.path


def _set_output(r: _Request, d: Directive) -> None:
    r.output = shell_file_name(d.value or "")


def _set_error(r: _Request, d: Directive) -> None:
    r.error = shell_file_name(d.value or "")


def _set_open_mode(r: _Request, d: Directive) -> None:
    if d.value != "append":
        raise ValueError(f"only append is supported: every task of the job (and every retry) "
                         f"writes to the one file, got {quote(d.value)}")


def _set_array(r: _Request, d: Directive) -> None:
    r.array = parse_array(d.value or "")


_HANDLERS = {
    "job-name": _set_name, "nodes": _set_nodes, "ntasks": _set_ntasks,
    "ntasks-per-node": _set_per_node, "cpus-per-task": _set_cpus, "mem": _set_mem,
    "mem-per-cpu": _set_mem_per_cpu, "gres": _set_gres, "gpus-per-node": _set_gpus_per_node,
    "gpus": _set_gpus, "gpus-per-task": _set_gpus_per_task, "time": _set_time,
    "partition": _set_partition, "qos": _set_qos, "dependency": _set_dependency,
    "hold": _set_hold, "comment": _set_comment, "chdir": _set_chdir, "array": _set_array,
    "output": _set_output, "error": _set_error, "open-mode": _set_open_mode,
}


# ---- the document -------------------------------------------------------------------------

def _interpreter(text: str, request: _Request) -> list[str] | None:
    """The `#!` line's program and arguments, if it takes `-c TEXT`."""
    words = text.splitlines()[0][2:].split()
    program = words[1:2] if words and PurePath(words[0]).name == "env" else words[:1]
    name = PurePath(program[0]).name if program else ""
    if name not in INTERPRETERS:
        request.problems.append(("#!", f"line 1: the script is run with its interpreter's "
                                       f"-c; supported: {', '.join(INTERPRETERS)}, got "
                                       f"{quote(text.splitlines()[0][:80])}"))
        return None
    return words


def _file_name(source: str) -> str | None:
    if source in NAMELESS_SOURCES:
        return None
    return _NOT_NAME.sub("-", PurePath(source).stem).strip("-") or None


@dataclass(frozen=True, slots=True)
class _Shape:
    nodes: int
    tasks: int
    per_node: int


def _shape(r: _Request) -> _Shape:
    nodes = r.nodes or 1
    if r.ntasks is not None:
        tasks = r.ntasks
    elif r.per_node is not None:
        tasks = nodes * r.per_node
    else:
        tasks = nodes  # Slurm's default: one task per node
    per_node = r.per_node if r.per_node is not None else -(-tasks // nodes)
    return _Shape(nodes, tasks, per_node)


def _share(total: int, among: int, what: str, path: str, r: _Request) -> int | None:
    if total % among:
        r.problems.append((path, f"{total} {what} cannot be shared evenly among {among} "
                                 f"tasks; Shoal gives every task of a job the same"))
        return None
    return total // among


def _resources(r: _Request, shape: _Shape) -> tuple[dict[str, Any], str | None]:
    resources: dict[str, Any] = {"cpu": r.cpus}
    gpu_path = r.paths.get(f"{GROUP_PATH}.resources.gpu", PREFIX)
    gpus: int | None = None
    gpu_type: str | None = None
    if r.gpus_task is not None:
        gpus, gpu_type = r.gpus_task.count, r.gpus_task.type
    elif r.gpus_node is not None:
        gpus = _share(r.gpus_node.count, shape.per_node, "GPUs per node", gpu_path, r)
        gpu_type = r.gpus_node.type
    elif r.gpus_job is not None:
        gpus = _share(r.gpus_job.count, shape.tasks, "GPUs", gpu_path, r)
        gpu_type = r.gpus_job.type
    if gpus:
        resources["gpu"] = gpus
    memory: int | None = None
    if r.mem_per_cpu is not None:
        memory = r.mem_per_cpu * r.cpus
    elif r.mem_per_node is not None:
        memory = -(-r.mem_per_node // shape.per_node)
    if memory is not None:
        resources["memory"] = f"{memory >> 20}Mi" if memory % (1 << 20) == 0 else memory
    return resources, gpu_type


def _document(r: _Request, interpreter: list[str], text: str) -> dict[str, Any] | None:
    shape = _shape(r)
    resources, gpu_type = _resources(r, shape)
    if r.problems:
        return None
    name = str(r.name)
    shell = PurePath((interpreter[1:2] if PurePath(interpreter[0]).name == "env"
                      else interpreter[:1])[0]).name in SHELLS
    command = ["/bin/sh", "-c", _prelude(r, shape), "slurm-task", *interpreter, "-c", text,
               *([name] if shell else [])]
    group: dict[str, Any] = {"name": GROUP, "replicas": shape.tasks, "resources": resources,
                             "command": command, "env": _env(r, name, shape)}
    if gpu_type is not None:
        group["nodeSelector"] = {GPU_TYPE_LABEL: gpu_type}
    if r.working_dir is not None:
        group["workingDir"] = r.working_dir
    spec: dict[str, Any] = {**r.spec, "taskGroups": [group]}
    if shape.tasks > 1:
        spec["schedulerName"] = "shoal"  # the tasks of one allocation start together
    metadata: dict[str, Any] = {"name": name}
    if r.annotations:
        metadata["annotations"] = dict(r.annotations)
    r.paths[f"{GROUP_PATH}.command"] = SCRIPT_PATH
    r.paths[f"{GROUP_PATH}.command[{command.index(text)}]"] = SCRIPT_PATH
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def _prelude(r: _Request, shape: _Shape) -> str:
    """Exports the per-task variables (Shoal's rank is SLURM_PROCID), sends the output where
    -o and -e say (appended: every task writes to it), then runs the script."""
    redirect = ""
    if r.output is not None:
        redirect += f" >>{r.output}"
    if r.error is not None or r.output is not None:
        redirect += f" 2>>{r.error}" if r.error is not None else " 2>&1"
    return (f'SLURM_PROCID="$SHOAL_RANK"; '
            f'SLURM_NODEID=$((SHOAL_RANK / {shape.per_node})); '
            f'SLURM_LOCALID=$((SHOAL_RANK % {shape.per_node})); '
            f'export SLURM_PROCID SLURM_NODEID SLURM_LOCALID; exec "$@"{redirect}')


def _env(r: _Request, name: str, shape: _Shape) -> dict[str, str]:
    env = {"SLURM_JOB_NAME": name, "SLURM_JOB_ID": name, "SLURM_NTASKS": str(shape.tasks),
           "SLURM_NPROCS": str(shape.tasks), "SLURM_NNODES": str(shape.nodes),
           "SLURM_JOB_NUM_NODES": str(shape.nodes),
           "SLURM_NTASKS_PER_NODE": str(shape.per_node),
           "SLURM_CPUS_PER_TASK": str(r.cpus)}
    if "queue" in r.spec:
        env["SLURM_JOB_PARTITION"] = str(r.spec["queue"])
    return env


def _array_env(name: str, indices: ArrayIndices, index: int) -> dict[str, str]:
    return {"SLURM_ARRAY_TASK_ID": str(index), "SLURM_ARRAY_JOB_ID": name,
            "SLURM_JOB_ID": element_name(name, index),
            "SLURM_ARRAY_TASK_COUNT": str(indices.count),
            "SLURM_ARRAY_TASK_MIN": str(indices.indices[0]),
            "SLURM_ARRAY_TASK_MAX": str(indices.indices[-1])}


SLURM_BATCH = SlurmBatchImporter()
