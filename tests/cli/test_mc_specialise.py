"""`shoal mc specialise` and `shoal mc validate` on the examples: the copy as YAML or JSON,
secrets hidden unless asked, clean errors (exit 2, the field path, no traceback), the
loader's pointer from `shoal schedule`, and `shoal mc specialise` loading none of the
server's, the store's, the control plane's or the scheduler's modules."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from light_runs import heavy_in, run_shoal
from typer.testing import CliRunner

from shoal.cli.main import app, only

ROOT = Path(__file__).resolve().parents[2]
SUPER2 = ROOT / "examples" / "multicluster" / "super2.yaml"
MC_JOB = ROOT / "examples" / "multicluster" / "mc-job.yaml"
runner = CliRunner()


def test_specialise_prints_the_members_copy_as_yaml_with_secrets_hidden() -> None:
    result = runner.invoke(app, ["mc", "specialise", str(SUPER2), "--cluster", "v100"])
    assert result.exit_code == 0, result.output
    copy = yaml.safe_load(result.stdout)
    assert copy["protocolVersion"] == "2" and copy["name"] == "mc-resnet-v100"
    assert copy["secrets"] == {"token-v100": "<hidden>"}
    main = copy["taskRoles"]["main"]
    assert main["resourcePerInstance"]["gpu"] == 4
    assert main["commands"] == ["python train.py --gpus 4 --data /mnt/imagenet"]
    assert copy["extras"]["com.microsoft.pai.runtimeplugin"] == [
        {"plugin": "teamwise_storage",
         "parameters": {"storageConfigNames": ["confignfs", "imagenet-blob"]}}]
    assert "<token-" not in result.stdout


def test_show_secrets_shows_only_the_members_own_token() -> None:
    result = runner.invoke(app, ["mc", "specialise", str(SUPER2), "-c", "k80", "-o", "json",
                                 "--show-secrets"])
    assert result.exit_code == 0, result.output
    copy = json.loads(result.stdout)
    assert copy["secrets"] == {"token-k80": "<token-k80>"}
    assert "<token-v100>" not in result.stdout
    assert copy["taskRoles"]["main"]["resourcePerInstance"]["gpu"] == 8


def test_specialise_a_shoal_form_prints_a_job_document() -> None:
    result = runner.invoke(app, ["mc", "specialise", str(MC_JOB), "-c", "small"])
    assert result.exit_code == 0, result.output
    copy = yaml.safe_load(result.stdout)
    assert (copy["apiVersion"], copy["kind"], copy["metadata"]["name"]) == (
        "shoal/v1", "Job", "mc-train-small")
    assert copy["spec"]["taskGroups"][0]["resources"]["gpu"] == 1


def test_an_unknown_cluster_is_a_clean_error() -> None:
    result = runner.invoke(app, ["mc", "specialise", str(SUPER2), "-c", "a100"])
    assert result.exit_code == 2
    assert "names no cluster 'a100'" in result.stderr and "'v100', 'k80'" in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_validate_lists_members_policy_times_and_parameters() -> None:
    result = runner.invoke(app, ["mc", "validate", str(SUPER2)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == ("mc-resnet (super-2): policy fac-priority, guard time 10m (600s), "
                        "time scale 1m (60s)")
    assert lines[2].split() == ["v100", "https://pai-v100.example.com/rest-server", "alice",
                                "90", "mc-resnet-v100"]
    assert ["storageConfigs", '["confignfs",', '"imagenet-blob"]', '["confignfs"]'] in [
        line.split() for line in lines]
    assert lines[-1].startswith("valid: each of the 2 members' copies")


def test_validate_reports_each_bad_copy_with_its_path_and_cluster(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SUPER2.read_text().replace("k80: 8", "k80: eight"))
    result = runner.invoke(app, ["mc", "validate", str(bad)])
    assert result.exit_code == 2
    assert ("taskRoles.main.resourcePerInstance.gpu: must be an integer, got 'eight' (on "
            "cluster 'k80')") in result.stderr


def test_a_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mc", "validate", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2 and "cannot read the file" in result.stderr


def test_schedule_points_a_multicluster_file_to_shoal_mc() -> None:
    for path in (SUPER2, MC_JOB):
        result = runner.invoke(app, ["schedule", str(path)])
        assert result.exit_code == 2
        assert "shoal mc specialise FILE --cluster ALIAS" in result.stderr
        assert "apiVersion: required field is missing" not in result.stderr


def test_the_mc_group_runs_alone() -> None:
    narrow = only("mc")
    assert narrow is not None
    result = runner.invoke(narrow, ["mc", "specialise", str(MC_JOB), "-c", "big", "-o",
                                    "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["metadata"]["name"] == \
        "mc-train-big"


#: What `shoal mc specialise` must not load: it works on a file, offline.
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "starlette", "psutil", "httpx",
         "shoal.server", "shoal.store", "shoal.control", "shoal.executors", "shoal.scheduler",
         "shoal.sim", "shoal.scenario", "shoal.client", "shoal.federation")


def test_specialise_loads_no_server_store_control_or_scheduler(tmp_path: Path) -> None:
    done, modules = run_shoal(tmp_path, "mc", "specialise", str(SUPER2), "--cluster", "v100")
    assert yaml.safe_load(done.stdout)["name"] == "mc-resnet-v100"  # it really ran
    assert "shoal.spec.specialise" in modules  # the check can fail: it sees what loaded
    assert heavy_in(modules, HEAVY) == []
