"""The `shoal` CLI: scenario output, schema, and clean errors (exit 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoal.cli.main import COMMANDS, app, app_for, listing, only

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quickstart.yaml"
runner = CliRunner()


def test_schedule_json_output_is_documented_shape() -> None:
    result = runner.invoke(app, ["schedule", str(EXAMPLE), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["apiVersion"] == "shoal/v1" and out["kind"] == "ScheduleResult"
    assert set(out) == {"apiVersion", "kind", "profile", "converged", "cycles", "cyclesRun",
                        "pending", "jobs"}
    bind = out["cycles"][0]["binds"][0]
    assert set(bind) == {"task", "job", "group", "index", "node", "gpus", "resources"}
    waiting = {p["job"]: p["reason"] for p in out["pending"]}
    assert waiting["llm-pretrain"]["kind"] == "Unschedulable"
    assert "worker" in waiting["llm-pretrain"]["message"]


def test_schedule_table_output() -> None:
    result = runner.invoke(app, ["schedule", str(EXAMPLE)])
    assert result.exit_code == 0
    assert "resnet-sweep/worker/0" in result.stdout
    assert "Waiting jobs" in result.stdout and "converged" in result.stdout


def test_schedule_table_shows_resizes(tmp_path: Path) -> None:
    """An elastic job's size changes get their own table (seed 001's story 3)."""
    cluster = tmp_path / "elastic.yaml"
    cluster.write_text(
        "apiVersion: shoal/v1\nkind: Node\nmetadata: {name: n}\n"
        "spec: {capacity: {cpu: 8, memory: 8Gi, gpu: 4}}\n---\n"
        "apiVersion: shoal/v1\nkind: Job\nmetadata: {name: stretchy}\nspec:\n"
        "  schedulerName: shoal\n  elastic: {minReplicas: 1, step: powerOfTwo}\n"
        "  taskGroups: [{name: w, replicas: 4, resources: {cpu: 1, gpu: 1}}]\n")
    result = runner.invoke(app, ["schedule", str(cluster), "--profile", "elastic"])
    assert result.exit_code == 0, result.output
    assert "Resizes (elastic jobs, partial admissions)" in result.stdout
    assert "grown from 2 into idle" in result.stdout  # 1 → 2 in cycle 1, 2 → 4 in cycle 2


def test_cycle_limit() -> None:
    result = runner.invoke(app, ["schedule", str(EXAMPLE), "-o", "json", "--cycles", "1"])
    out = json.loads(result.stdout)
    assert out["cyclesRun"] == 1 and out["converged"] is False


BAD_INPUTS = {
    "negative": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                 "  taskGroups: [{name: w, replicas: 1, resources: {cpu: -1}}]\n",
                 "spec.taskGroups[0].resources.cpu"),
    "unknown-field": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                      "  bogus: 1\n"
                      "  taskGroups: [{name: w, replicas: 1, resources: {cpu: 1}}]\n", "bogus"),
    "min-available": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                      "  schedulerName: shoal\n  minAvailable: 3\n"
                      "  taskGroups: [{name: w, replicas: 2, resources: {cpu: 1}}]\n",
                      "minAvailable"),
    "unknown-queue": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                      "  queue: nowhere\n"
                      "  taskGroups: [{name: w, replicas: 1, resources: {cpu: 1}}]\n",
                      "nowhere"),
    "yaml": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: [\n", "line"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_a_clear_error_not_a_traceback(case: str, tmp_path: Path) -> None:
    text, needle = BAD_INPUTS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["schedule", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert needle in result.output
    assert str(path) in result.output  # the message names the file


def test_missing_file_and_bad_profile(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schedule", str(tmp_path / "absent.yaml")])
    assert result.exit_code == 2 and "absent.yaml" in result.output
    result = runner.invoke(app, ["schedule", str(EXAMPLE), "--profile", "nonsense"])
    assert result.exit_code == 2 and "nonsense" in result.output


def test_schema_command_prints_json_schema() -> None:
    result = runner.invoke(app, ["schema"])
    schema = json.loads(result.stdout)
    assert "$schema" in schema or "oneOf" in json.dumps(schema)


def test_installed_entry_point_runs() -> None:
    """The console script as a user runs it (a real subprocess)."""
    shoal = Path(sys.executable).parent / "shoal"
    proc = subprocess.run([str(shoal), "schedule", str(EXAMPLE), "-o", "json"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "ScheduleResult"


def test_up_with_a_bad_cluster_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text("apiVersion: shoal/v1\nkind: Node\nmetadata: {name: n}\nspec: {}\n")
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--cluster", str(bad),
                                 "--port", "0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "capacity" in result.output
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--profile", "nope"])
    assert result.exit_code == 2 and "nope" in result.output


@pytest.mark.parametrize("ttl", ["bogus", "nan", "-5"])
def test_up_refuses_a_bad_job_ttl_before_starting(tmp_path: Path, ttl: str) -> None:
    data = tmp_path / "data"
    result = runner.invoke(app, ["up", "--data-dir", str(data), "--job-ttl", ttl])
    assert result.exit_code == 2, result.output
    assert "--job-ttl" in result.output
    assert not data.exists()


@pytest.mark.parametrize(("content", "why"), [
    (b"", "it is empty"), (b" \n\t\n", "it is empty"), (b"two words\n", "one word"),
    (b"tok\x00en", "one word"), ("tökén".encode(), "one word"),
    (b"x" * 5000, "larger than 4096 bytes"), (None, "cannot read it")])
def test_up_refuses_a_bad_metrics_token_file_before_starting(
        tmp_path: Path, content: bytes | None, why: str) -> None:
    data, token = tmp_path / "data", tmp_path / "scrape.token"
    if content is not None:
        token.write_bytes(content)
    result = runner.invoke(app, ["up", "--data-dir", str(data), "--metrics-token-file",
                                 str(token)])
    assert result.exit_code == 2, result.output
    message = unboxed(result.output)
    assert "--metrics-token-file" in message and why in message
    assert not data.exists()


def unboxed(output: str) -> str:
    """A rich error box's message on one line, wherever the terminal's width wrapped it."""
    return " ".join(output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())


def test_up_refuses_a_scrape_token_with_metrics_open(tmp_path: Path) -> None:
    (tmp_path / "scrape.token").write_text("secret\n")
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "data"), "--metrics-open",
                                 "--metrics-token-file", str(tmp_path / "scrape.token")])
    assert result.exit_code == 2 and "--metrics-open" in result.output, result.output


def _names() -> list[str]:
    commands = [c.name or c.callback.__name__.replace("_", "-")
                for c in app.registered_commands if c.callback is not None]
    return commands + [g.name for g in app.registered_groups if g.name]


@pytest.mark.parametrize("name", _names())
def test_a_command_run_alone_reads_as_in_the_whole_app(name: str) -> None:
    """`shoal NAME …` builds only NAME (`only`): its help, and a usage error, are those of
    the whole app."""
    narrow = only(name)
    assert narrow is not None
    for args in ([name, "--help"], [name, "--no-such-option"]):
        alone, whole = runner.invoke(narrow, args), runner.invoke(app, args)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)


def test_only_knows_the_app_s_names_and_no_other() -> None:
    assert {"up", "submit", "jobs", "get", "logs", "schedule", "vc", "sim"} <= set(_names())
    assert only("no-such-command") is None and only("--help") is None
    assert sorted(entry.name for entry in COMMANDS) == sorted(_names())  # each once


@pytest.mark.parametrize("args", [[], ["--help"], ["-h"], ["no-such-command"], ["vcx", "tree"],
                                  ["--no-such-option"]])
def test_the_listing_reads_as_the_whole_app(args: list[str]) -> None:
    """`shoal` and `shoal --help` run `listing` (no command's parameters read): it prints
    what the whole app prints, mistyped names' suggestions included."""
    assert app_for(args) is listing()
    listed, whole = runner.invoke(listing(), args), runner.invoke(app, args)
    assert (listed.exit_code, listed.output) == (whole.exit_code, whole.output)
    assert listed.output.strip()


def test_a_command_line_runs_the_command_it_names() -> None:
    narrow = app_for(["jobs", "--limit", "3"])
    assert [c.name for c in narrow.registered_commands] == ["jobs"]
    assert not narrow.registered_groups
    assert [g.name for g in app_for(["vc", "tree"]).registered_groups] == ["vc"]
    # a name that only an option's value or `--` puts in reach: the whole app decides
    assert app_for(["--", "jobs"]) is app
