"""`shoal mc sim` (the command function of `shoal.cli.mc_sim`, in the `shoal mc` group): the
table, the JSON, and bad input refused with the option named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from multicluster_traces import write_itp_members
from typer.testing import CliRunner

from shoal.cli.multicluster import mc_app as app


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_itp_members(tmp_path_factory.mktemp("itp"))


def test_the_table_names_each_member_and_policy(traces: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--traces", str(traces), "--days", "60"],
                                env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "100 jobs over 5 members: itp1 " in result.output
    for policy in ("single", "fac-priority"):
        assert f"│ {policy} " in result.output


def test_json_gives_one_object_per_chosen_policy(traces: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--traces", str(traces), "--days", "60",
                                      "--policies", "fac,single", "--json", "--limit", "5"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [(r["policy"], r["jobs"]) for r in rows] == [("fac", 25), ("single", 25)]


@pytest.mark.parametrize(("args", "message"), [
    (["--policies", "fac,best"], "--policies: unknown best; choose from single, fac, "
                                 "fac-priority"),
    (["--traces", "/no/such/dir"], "/no/such/dir/cluster01.csv"),
])
def test_bad_input_is_refused_naming_it(traces: Path, args: list[str], message: str) -> None:
    full = ["sim", "--traces", str(traces), *args]
    result = CliRunner().invoke(app, full)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_split_deals_one_trace_over_the_members(traces: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--split", str(traces / "cluster01.csv"),
                                      "--days", "60", "--json", "--policies", "single"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    # 20 jobs dealt in turn over five members: four each, every one kept at home.
    assert row["by_cluster"] == {f"itp{k}": 4 for k in range(1, 6)}


def test_traces_and_split_are_one_or_the_other(traces: Path) -> None:
    result = CliRunner().invoke(app, ["sim", "--traces", str(traces), "--split",
                                      str(traces / "cluster01.csv")])
    assert result.exit_code == 2
    assert "give one of --traces" in result.output
