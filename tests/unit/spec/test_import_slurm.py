"""Slurm batch scripts → native Jobs: a table of scripts as Slurm users write them and the
Job each becomes, a table of refused options with their paths and messages, and the
loader's path (a `#!` text is one script document, named after its file without -J)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from shoal.api import Job, SchedulerName
from shoal.spec import SpecError, load_text
from shoal.spec.imports import ImportFormat
from shoal.spec.imports.slurm_header import directives, parse_time


def script(header: str, body: str = "srun python train.py\n",
           shebang: str = "#!/bin/bash") -> str:
    return f"{shebang}\n{textwrap.dedent(header).strip()}\n\n{body}"


def jobs(text: str, source: str = "train.sbatch") -> tuple[Job, ...]:
    bundle = load_text(text, source, known_queues=("gpu", "debug"),
                       known_priority_classes=("high",))
    return bundle.jobs


@dataclass(frozen=True)
class Expected:
    name: str
    replicas: int
    resources: dict[str, int]
    gang: bool = False
    queue: str = "default"
    time_limit: float | None = None
    node_selector: dict[str, str] | None = None
    env: dict[str, str] | None = None
    depends_on: tuple[str, ...] = ()
    held: bool = False
    priority_class: str | None = None
    annotations: dict[str, str] | None = None
    working_dir: str | None = None


GiB = 1024  # memory is counted in MiB
MiB = 1

CASES = [
    pytest.param(script("""
        #SBATCH --job-name=resnet
        #SBATCH -N 2
        #SBATCH --ntasks-per-node=4
        #SBATCH --gres=gpu:4
        #SBATCH --cpus-per-task=8
        #SBATCH --mem=64G
        #SBATCH -t 1-00:00:00
        #SBATCH -p gpu
        """), Expected("resnet", 8, {"cpu": 8000, "memory": 16 * GiB, "gpu": 1}, gang=True,
                       queue="gpu", time_limit=86400,
                       env={"SLURM_JOB_NAME": "resnet", "SLURM_NTASKS": "8",
                            "SLURM_NNODES": "2", "SLURM_NTASKS_PER_NODE": "4",
                            "SLURM_CPUS_PER_TASK": "8", "SLURM_JOB_PARTITION": "gpu"}),
        id="multi-node-gres"),
    pytest.param(script("""
        #SBATCH -Jsmall -n1 -c2 --mem-per-cpu=2000 -t 30
        #SBATCH --gres=gpu:a100:1 --qos=high
        """), Expected("small", 1, {"cpu": 2000, "memory": 4000 * MiB, "gpu": 1},
                       time_limit=1800, node_selector={"gpu-type": "a100"},
                       priority_class="high"),
        id="short-options-typed-gpu"),
    pytest.param(script("""
        #SBATCH --ntasks 4 --gpus=a100:4 --time=2:30:00   # four ranks
        #SBATCH --dependency=afterok:prep:tokenize --hold
        #SBATCH --comment "sweep 3"  --chdir=/srv/exp
        """), Expected("train", 4, {"cpu": 1000, "gpu": 1}, gang=True, time_limit=9000,
                       node_selector={"gpu-type": "a100"},
                       depends_on=("prep", "tokenize"), held=True,
                       annotations={"slurm.schedmd.com/comment": "sweep 3"},
                       working_dir="/srv/exp"),
        id="file-name-gpus-per-job-dependency-hold"),
    pytest.param(script("""
        # a plain comment before the directives is fine
        #SBATCH --gpus-per-task=2 -N 3 --mem=12G
        """), Expected("train", 3, {"cpu": 1000, "gpu": 2, "memory": 12 * GiB}, gang=True),
        id="gpus-per-task-one-task-per-node"),
    pytest.param(script("#SBATCH -t UNLIMITED -p debug", shebang="#!/usr/bin/env python3",
                        body="print('hi')\n"),
                 Expected("train", 1, {"cpu": 1000}, queue="debug"),
                 id="python-no-limit"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_a_script_becomes_the_job_its_header_asks_for(text: str, expected: Expected) -> None:
    (job,) = jobs(text)
    (group,) = job.groups
    assert job.name == expected.name
    assert group.name == "batch"
    assert group.replicas == expected.replicas
    given = {k: v for k, v in {"cpu": group.resources.cpu, "memory": group.resources.memory,
                               "gpu": group.resources.gpu}.items() if v}
    assert given == expected.resources
    assert (job.scheduler_name is SchedulerName.SHOAL) is expected.gang
    assert job.queue == expected.queue
    assert job.time_limit == expected.time_limit
    assert dict(group.node_selector) == (expected.node_selector or {})
    for key, value in (expected.env or {}).items():
        assert group.env[key] == value
    assert job.depends_on == expected.depends_on
    assert job.held is expected.held
    assert job.priority_class == expected.priority_class
    assert dict(job.annotations) == (expected.annotations or {})
    assert group.working_dir == expected.working_dir


def test_the_script_itself_is_the_command_run_by_its_interpreter() -> None:
    text = script("#SBATCH -n 2")
    (job,) = jobs(text)
    command = job.groups[0].command
    assert command[0] == "/bin/sh" and command[3] == "slurm-task"
    assert list(command[4:]) == ["/bin/bash", "-c", text, "train"]
    assert 'SLURM_PROCID="$SHOAL_RANK"' in command[2]


def test_the_original_is_the_script_text() -> None:
    text = script("#SBATCH -J kept")
    bundle = load_text(text, "x.sbatch")
    assert bundle.originals["kept"].format is ImportFormat.SLURM_BATCH
    assert bundle.originals["kept"].document == text


def test_an_array_becomes_one_job_per_index_with_its_slurm_variables() -> None:
    out = jobs(script("#SBATCH -J sweep --array=0-6:3 -n 1"))
    assert [j.name for j in out] == ["sweep-0", "sweep-3", "sweep-6"]
    for job, index in zip(out, (0, 3, 6), strict=True):
        env = job.groups[0].env
        assert env["SLURM_ARRAY_TASK_ID"] == env["SHOAL_ARRAY_INDEX"] == str(index)
        assert env["SLURM_ARRAY_JOB_ID"] == "sweep"
        assert env["SLURM_JOB_ID"] == f"sweep-{index}"
        assert env["SLURM_ARRAY_TASK_COUNT"] == "3"
        assert (env["SLURM_ARRAY_TASK_MIN"], env["SLURM_ARRAY_TASK_MAX"]) == ("0", "6")
        assert job.annotations["shoal/array"] == "sweep"


REFUSED = [
    ("#SBATCH --mail-user=me@example.com", "#SBATCH --mail-user", "line 2: Shoal sends no mail"),
    ("#SBATCH -o out-%4j.log", "#SBATCH --output", "line 2: a padded pattern (%4j)"),
    ("#SBATCH -e err-%b.log", "#SBATCH --error", "the pattern %b is not supported"),
    ("#SBATCH --open-mode=truncate", "#SBATCH --open-mode", "only append is supported"),
    ("#SBATCH --exclusive", "#SBATCH --exclusive", "never reserves whole nodes"),
    ("#SBATCH -A proj42", "#SBATCH --account", "there are no accounts"),
    ("#SBATCH --signal=USR1@60", "#SBATCH --signal", "is not supported by Shoal; supported:"),
    ("#SBATCH --array=0-99%5", "#SBATCH --array", "a throttle ('%N'"),
    ("#SBATCH --array=0-5000", "#SBATCH --array", "at most 1000 jobs"),
    ("#SBATCH --dependency=afterany:prep", "#SBATCH --dependency", "only afterok:JOB"),
    ("#SBATCH --dependency=afterok:a?afterok:b", "#SBATCH --dependency", "'?'"),
    ("#SBATCH -N 2-4", "#SBATCH --nodes", "a range of nodes is not supported"),
    ("#SBATCH -t 1:2:3:4", "#SBATCH --time", "must be MM, MM:SS, HH:MM:SS"),
    ("#SBATCH --mem=0", "#SBATCH --mem", "all of a node's memory"),
    ("#SBATCH --mem=lots", "#SBATCH --mem", "must be a size such as"),
    ("#SBATCH --gres=shard:2", "#SBATCH --gres", "only gpu is supported"),
    ("#SBATCH -N1 -n 3 --gres=gpu:2", "#SBATCH --gres",
     "2 GPUs per node cannot be shared evenly among 3 tasks"),
    ("#SBATCH -p gpu,debug", "#SBATCH --partition", "one partition only"),
    ("#SBATCH -c", "#SBATCH --cpus-per-task", "needs a value"),
    ("#SBATCH -c zero", "#SBATCH --cpus-per-task", "must be a whole number of CPUs"),
    ("#SBATCH --job-name='unterminated", "#SBATCH", "line 2: cannot read the options"),
    ("#SBATCH nodes=2", "#SBATCH", "'nodes=2' is not an sbatch option"),
    ("#SBATCH -J bad/name", "#SBATCH --job-name", "letters, digits"),
    ("#SBATCH -p nowhere", "#SBATCH --partition", "unknown queue 'nowhere'"),
    ("#SBATCH --qos=platinum", "#SBATCH --qos", "platinum"),
]


@pytest.mark.parametrize(("header", "path", "message"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_an_option_shoal_cannot_honour_is_refused_under_its_path(header: str, path: str,
                                                                  message: str) -> None:
    with pytest.raises(SpecError) as caught:
        jobs(script(header))
    found = [(i.path, i.message) for i in caught.value.issues]
    assert any(p == path and message in m for p, m in found), found


def test_an_interpreter_without_dash_c_is_refused_on_line_one() -> None:
    with pytest.raises(SpecError) as caught:
        jobs(script("#SBATCH -n 1", shebang="#!/usr/bin/perl"))
    (issue,) = caught.value.issues
    assert issue.path == "#!" and "line 1" in issue.message and "perl" in issue.message


def test_a_script_sent_without_a_file_name_needs_a_job_name() -> None:
    with pytest.raises(SpecError) as caught:
        jobs(script("#SBATCH -n 1"), source="request")
    assert [i.path for i in caught.value.issues] == ["#SBATCH --job-name"]
    (job,) = jobs(script("#SBATCH -n 1 -J named"), source="request")
    assert job.name == "named"


def test_a_script_too_long_for_one_argument_is_refused_at_the_script() -> None:
    with pytest.raises(SpecError) as caught:
        jobs(script("#SBATCH -n 1", body="echo x\n" * 5000))
    (issue,) = caught.value.issues
    assert issue.path == "script" and "16384" in issue.message


def test_directives_end_at_the_first_command_as_sbatch_reads_them() -> None:
    text = script("#SBATCH -n 2", body="echo go\n#SBATCH --mail-user=ignored\n")
    assert [(d.option, d.value) for d in directives(text)] == [("ntasks", "2")]
    assert jobs(text)[0].groups[0].replicas == 2


def test_the_header_is_bounded() -> None:
    text = script("\n".join(["#SBATCH -n 1"] * 300))
    with pytest.raises(SpecError, match="at most 256 #SBATCH lines"):
        jobs(text)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30", 1800), ("5:30", 330), ("01:02:03", 3723), ("2-12", 216000),
    ("1-00:30", 88200), ("1-01:01:01", 90061), ("0", None), ("UNLIMITED", None),
    ("infinite", None)])
def test_slurm_time_formats(text: str, seconds: int | None) -> None:
    assert parse_time(text) == seconds


ARRAY_JOB = '"${SLURM_ARRAY_JOB_ID-$SLURM_JOB_ID}"'
ARRAY_TASK = '"${SLURM_ARRAY_TASK_ID-4294967294}"'


@pytest.mark.parametrize(("header", "redirect"), [
    ("#SBATCH -o logs/%x-%j.out",
     """ >>'logs/'"$SLURM_JOB_NAME"'-'"$SLURM_JOB_ID"'.out' 2>&1"""),
    ("#SBATCH -o o.%t -e \"it's %%.err\"", """ >>'o.'"$SLURM_PROCID" 2>>'it'\\''s '%'.err'"""),
    ("#SBATCH --error=e-%A_%a", f" 2>>'e-'{ARRAY_JOB}'_'{ARRAY_TASK}"),
])
def test_output_and_error_files_are_appended_to_by_the_tasks(header: str, redirect: str
                                                              ) -> None:
    (job,) = jobs(script(header))
    assert job.groups[0].command[2].endswith('exec "$@"' + redirect)
