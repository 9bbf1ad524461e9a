"""Imported job files run end to end through a real `shoal up` on the local executor: a
Slurm batch script sent as it is (`shoal submit job.sbatch`: its tasks print the SLURM_*
values they were given, or write to its -o/-e files), and an OpenPAI protocol-v2 job (its
roles' commands run, with their parameters rendered and their PAI_* variables). Arrays:
test_arrays_live.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from shoal_documents import node_yaml
from shoal_up_process import Up, shoal_up, until
from typer.testing import CliRunner

from shoal.api import JobState
from shoal.cli.main import app
from shoal.client import JobView, ShoalClient

runner = CliRunner()


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("imports")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home) as server:
        yield server


def submit(up: Up, path: Path) -> list[str]:
    """`shoal submit PATH`: the names it printed."""
    result = runner.invoke(app, ["submit", str(path), "--server", up.url, "--token", up.token])
    assert result.exit_code == 0, result.output
    return result.output.split()


def succeeded(client: ShoalClient, name: str) -> None:
    def ended() -> JobView | None:
        job = client.get_job(name)
        return job if job.terminal else None
    job = until(f"{name} to end", ended)
    assert job.state is JobState.SUCCEEDED, (job.state, job.events)


def stdout(client: ShoalClient, name: str, task: str) -> str:
    return "".join(client.logs(name, task))


SCRIPT = """\
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --cpus-per-task=1
#SBATCH --mem=256M
#SBATCH -t 10:00
#SBATCH --comment="live import test"
set -eu
echo "procid=$SLURM_PROCID ntasks=$SLURM_NTASKS name=$SLURM_JOB_NAME localid=$SLURM_LOCALID"
echo "script=$0"
"""


def test_a_batch_script_runs_as_sent_with_its_slurm_environment(up: Up, tmp_path: Path
                                                                ) -> None:
    path = tmp_path / "hello-slurm.sbatch"
    path.write_text(SCRIPT)
    assert submit(up, path) == ["hello-slurm"]  # no -J: named after the file
    client = up.client()
    succeeded(client, "hello-slurm")
    for rank in (0, 1):
        out = stdout(client, "hello-slurm", f"batch-{rank}")
        assert (f"procid={rank} ntasks=2 name=hello-slurm localid={rank}") in out, out
        assert "script=hello-slurm" in out, out


def test_a_scripts_output_goes_to_the_files_its_header_names(up: Up, tmp_path: Path
                                                             ) -> None:
    shared = up.scratch.shared
    path = tmp_path / "to-files.sbatch"
    path.write_text(f"""\
#!/bin/sh
#SBATCH -n 2 -c 1
#SBATCH -o {shared}/%x-%t.out
#SBATCH -e {shared}/%x.err
echo "out of $SLURM_PROCID"
echo "err of $SLURM_PROCID" >&2
""")
    assert submit(up, path) == ["to-files"]
    succeeded(up.client(), "to-files")
    for rank in (0, 1):
        assert (shared / f"to-files-{rank}.out").read_text() == f"out of {rank}\n"
    assert sorted((shared / "to-files.err").read_text().splitlines()) == [
        "err of 0", "err of 1"]


OPENPAI = """\
protocolVersion: 2
name: pai-live
type: job
parameters: {greeting: hello-from-pai}
taskRoles:
  main_role:
    instances: 2
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
    commands:
      - echo "<% $parameters.greeting %> role=$PAI_CURRENT_TASK_ROLE_NAME"
      - >-
        echo "index=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX
        of $PAI_TASK_ROLE_TASK_COUNT_main_role"
"""


def test_an_openpai_job_runs_its_roles_commands(up: Up, tmp_path: Path) -> None:
    path = tmp_path / "pai.yaml"
    path.write_text(OPENPAI)
    assert submit(up, path) == ["pai-live"]
    client = up.client()
    succeeded(client, "pai-live")
    for index in (0, 1):
        out = stdout(client, "pai-live", f"main-role-{index}")
        assert "hello-from-pai role=main_role" in out, out
        assert f"index={index} of 2" in out, out
