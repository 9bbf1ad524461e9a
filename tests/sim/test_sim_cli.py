"""`shoal sim run|compare` and bench/sim.py: outputs, determinism, clean errors."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shoal.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"
runner = CliRunner()


def test_run_writes_reports(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "itp-cluster01-sample.csv"),
                                 "-c", "4x8", "-p", "fifo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "mean JCT" in result.stdout
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["jobs-fifo.csv", "report.html", "summary-fifo.json"]
    summary = json.loads((tmp_path / "summary-fifo.json").read_text())
    assert summary["jobs"] == summary["finished"] + summary["unfinished"]


def test_compare_is_deterministic_byte_for_byte(tmp_path: Path) -> None:
    outputs = []
    for run in ("one", "two"):
        out = tmp_path / run
        result = runner.invoke(app, [
            "sim", "compare", "-t", str(TRACES / "philly-sample.csv"),
            "-c", str(TRACES / "cluster-small.yaml"), "-p", "fifo,sjf,default",
            "--single-queue", "--out", str(out)])
        assert result.exit_code == 0, result.output
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == 7  # 3 CSVs, 3 summaries, one report


def test_native_trace_and_alibaba_nodes() -> None:
    result = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "native-trace.yaml"),
                                 "-c", str(TRACES / "cluster-small.yaml")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, [
        "sim", "run", "-t", str(TRACES / "alibaba-openb-pods-sample.csv"),
        "-c", str(TRACES / "alibaba-openb-nodes-sample.csv")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("args", "needle"), [
    (["-t", "nowhere.csv", "-c", "4x8"], "nowhere.csv"),
    (["-t", str(TRACES / "philly-sample.csv"), "-c", "4y8"], "4y8"),
    (["-t", str(TRACES / "philly-sample.csv"), "-c", "4x8", "-p", "nope"], "nope"),
    (["-t", str(TRACES / "README.md"), "-c", "4x8"], "README.md"),
])
def test_bad_input_exits_2_without_traceback(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["sim", "run", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output


def test_sim_bench_prints_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(ROOT / "bench" / "sim.py"))
    assert module["main"](["--trace", str(TRACES / "philly-sample.csv"), "--jobs", "100",
                           "--cluster", "4x8"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["profile"] for line in lines] == ["fifo", "default"]
    for line in lines:
        for key in ("profile", "jobs", "wall_seconds", "jobs_per_second",
                    "events_per_second", "mean_jct_s"):
            assert key in line
        assert line["jobs"] == 100 and line["finished"] == 100


def test_speedup_table_option(tmp_path: Path) -> None:
    table = tmp_path / "curve.csv"
    table.write_text("gpus,throughput\n1,1.0\n8,4.0\n")
    result = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                                 "-c", "2x8", "--speedup", f"*={table}", "-n", "20"])
    assert result.exit_code == 0, result.output
    bad = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                              "-c", "2x8", "--speedup", "nonsense"])
    assert bad.exit_code == 2 and "MODEL=FILE" in bad.output


def test_queue_map_and_node_events(tmp_path: Path) -> None:
    rule = tmp_path / "map.yaml"
    rule.write_text("'*': research\n")
    events = tmp_path / "events.csv"
    events.write_text("time,node,state\n100,node-0,down\n5000,node-0,up\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                                 "-c", "2x8", "-n", "30", "--queue-map", str(rule),
                                 "--node-events", str(events), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary-default.json").read_text())
    assert set(summary["per_queue"]) == {"research"}
    bad = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                              "-c", "2x8", "--queue-map", str(events)])
    assert bad.exit_code == 2 and "mapping" in bad.output
    # A path past 80 columns: the error names it whole, not folded at a terminal's width.
    events = tmp_path / ("a-long-folder-name-" * 4) / "events.csv"
    events.parent.mkdir()
    events.write_text("time,node,state\nsoon,node-0,down\n")
    bad = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                              "-c", "2x8", "--node-events", str(events)])
    assert bad.exit_code == 2 and f"{events}:2" in bad.output and "time" in bad.output


POLLUX_WORKLOAD = ROOT.parent / "shared" / "traces" / "pollux" / "workloads" / "workload-1.csv"


def test_a_pollux_workload_is_recognised_and_brings_its_work_model(tmp_path: Path) -> None:
    """The header tells the format; the applications come from the artifact's traces/; with
    --elastic every job is elastic and the elastic profile grows them."""
    result = runner.invoke(app, ["sim", "compare", "-t", str(POLLUX_WORKLOAD), "-c", "16x4",
                                 "-p", "las,elastic", "--elastic", "--checkpoint", "60",
                                 "--limit", "20", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    las = json.loads((tmp_path / "summary-las.json").read_text())
    elastic = json.loads((tmp_path / "summary-elastic.json").read_text())
    assert las["jobs"] == elastic["jobs"] == 20
    assert las["finished"] == elastic["finished"] == 20
    # Under `las` (no elastic action) every elastic job runs at its minimum of 1 GPU;
    # the elastic profile grows them into the idle GPUs.
    assert elastic["mean_jct_s"] < las["mean_jct_s"]


def test_adaptive_batch_jobs_run_on_the_applications_best_batch(tmp_path: Path) -> None:
    """--adaptive-batch: elastic jobs that pick their batch size for their replicas (as
    AdaptDL does); on a workload's first jobs they finish sooner than with the batch they
    were submitted with."""
    runs = {}
    for flag in ("--elastic", "--adaptive-batch"):
        out = tmp_path / flag.strip("-")
        result = runner.invoke(app, ["sim", "run", "-t", str(POLLUX_WORKLOAD), "-c", "16x4",
                                     "-p", "las-elastic", flag, "--limit", "30",
                                     "--out", str(out)])
        assert result.exit_code == 0, result.output
        runs[flag] = json.loads((out / "summary-las-elastic.json").read_text())
    assert runs["--adaptive-batch"]["finished"] == runs["--elastic"]["finished"] == 30
    assert runs["--adaptive-batch"]["mean_jct_s"] < runs["--elastic"]["mean_jct_s"]


@pytest.mark.parametrize("flag", ["--elastic", "--adaptive-batch"])
def test_elastic_is_refused_for_other_formats(flag: str) -> None:
    result = runner.invoke(app, ["sim", "run", "-t", str(TRACES / "philly-sample.csv"),
                                 "-c", "4x8", flag])
    assert result.exit_code == 2
    assert f"{flag} applies to Pollux workloads only" in result.output


def test_sim_bench_takes_every_job_and_reports_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(ROOT / "bench" / "sim.py"))
    assert module["main"](["--trace", str(TRACES / "philly-sample.csv"), "--jobs", "0",
                           "--cluster", "4x8", "--profiles", "fifo",
                           "--cpu-limit", "600"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rows = len((TRACES / "philly-sample.csv").read_text().splitlines()) - 1
    assert line["jobs"] == rows and line["finished"] == rows
    assert line["stopped_early"] is False and line["cpu_seconds"] > 0
    assert line["jobs_per_cpu_second"] > 0 and "mean_jct_s" in line


def test_sim_bench_cpu_limit_reports_how_far_it_got(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A trace long enough for the progress check (every 5,000 events) to run mid-replay.
    trace = tmp_path / "long.csv"
    rows = [f"2017-10-09 {h:02d}:{m:02d}:00,3600.0,8,28800.0,c{h % 3}"
            for h in range(24) for m in range(60)]
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n")
    module = runpy.run_path(str(ROOT / "bench" / "sim.py"))
    assert module["main"](["--trace", str(trace), "--jobs", "0", "--cluster", "1x8",
                           "--profiles", "fifo", "--cpu-limit", "0"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert line["stopped_early"] is True and line["cpu_limit"] == 0
    assert line["jobs"] == len(rows) and 0 <= line["finished"] < len(rows)
    assert line["simulated_seconds"] > 0 and "mean_jct_s" not in line
