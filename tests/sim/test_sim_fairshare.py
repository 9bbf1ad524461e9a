"""The fairshare profile (seed 002) through the simulator, end to end: on the Philly sample
(rigid jobs) and on a Pollux workload with every job elastic, where the fairshare action
grows and shrinks jobs; every job finishes, and a second run is identical."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from shoal.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
PHILLY = ROOT / "examples" / "traces" / "philly-sample.csv"
POLLUX_WORKLOAD = ROOT.parent / "shared" / "traces" / "pollux" / "workloads" / "workload-1.csv"
runner = CliRunner()


def summary(out: Path, *args: str) -> dict[str, object]:
    result = runner.invoke(app, ["sim", "run", *args, "-p", "fairshare", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "summary-fairshare.json").read_text())
    assert isinstance(data, dict)
    return data


def test_fairshare_replays_the_philly_sample(tmp_path: Path) -> None:
    args = ("-t", str(PHILLY), "-c", "4x8", "--limit", "60")
    first = summary(tmp_path / "a", *args)
    assert first["finished"] == 60
    assert summary(tmp_path / "b", *args) == first


def test_fairshare_resizes_elastic_jobs_in_the_simulator(tmp_path: Path) -> None:
    first = summary(tmp_path / "a", "-t", str(POLLUX_WORKLOAD), "-c", "16x4", "--elastic",
                    "--limit", "30")
    assert first["finished"] == 30
