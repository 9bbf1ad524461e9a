"""Job files of other systems from the command line: `shoal schedule` runs each example
under examples/imports (scripts, OpenPAI, Ray, arrays) on its cluster, and the client sends
a batch script as text/x-shellscript with its file name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoal.cli.main import app
from shoal.client.client import SCRIPT, YAML, spec_body, spec_file_name

runner = CliRunner()
IMPORTS = Path(__file__).parents[2] / "examples" / "imports"


@pytest.mark.parametrize(("example", "jobs"), [
    ("train.sbatch", {"resnet-train"}),
    ("openpai-v2.yaml", {"mnist-dist"}),
    ("ray-job.json", {"tune-resnet"}),
    ("array-job.yaml", {f"eval-{i}" for i in (0, 2, 4, 6, 8)}),
])
def test_shoal_schedule_runs_each_example(example: str, jobs: set[str]) -> None:
    result = runner.invoke(app, ["schedule", str(IMPORTS / "cluster.yaml"),
                                 str(IMPORTS / example), "-o", "json", "-n", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    bound = {b["job"] for cycle in out["cycles"] for b in cycle["binds"]}
    assert bound == jobs


def test_an_array_script_becomes_its_jobs_beside_the_job_it_depends_on() -> None:
    result = runner.invoke(app, ["schedule", str(IMPORTS / "cluster.yaml"),
                                 str(IMPORTS / "train.sbatch"), str(IMPORTS / "sweep.sbatch"),
                                 "-o", "json", "-n", "2"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {j["name"] for j in out["jobs"]} >= {f"sweep-{i}" for i in range(5)}


def test_a_refused_option_names_its_file_and_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sbatch"
    bad.write_text("#!/bin/sh\n#SBATCH --mail-user=me@example.com\necho\n")
    result = runner.invoke(app, ["schedule", str(IMPORTS / "cluster.yaml"), str(bad)])
    assert result.exit_code != 0
    assert "#SBATCH --mail-user: line 2: Shoal sends no mail" in result.output


def test_the_client_sends_a_script_as_a_script(tmp_path: Path) -> None:
    path = tmp_path / "run.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH -n 1\necho\n")
    assert spec_body(path) == (SCRIPT, path.read_bytes())
    assert spec_body(str(path)) == (SCRIPT, path.read_bytes())
    assert spec_body("#!/bin/sh\necho\n")[0] == SCRIPT
    assert spec_body("kind: Job\n")[0] == YAML
    assert spec_file_name(path) == "run.sbatch"
    assert spec_file_name("#!/bin/sh\necho\n") is None
    assert spec_file_name(tmp_path / 'a";b.sbatch') is None
