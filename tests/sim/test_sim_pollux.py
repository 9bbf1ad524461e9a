"""The Pollux application model and workloads (`shoal.sim.pollux`, `loaders.pollux`): step
times read back exactly where measured, interpolated between, gradient accumulation beyond
the largest per-replica batch, run times from the validated step counts; the workload
loader's refusals name the line and column; and `bench/elastic.py` prints its documented
JSON (its numbers are the benchmark's, not the test's)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from shoal.api import Elasticity
from shoal.sim.loaders.pollux import load_pollux
from shoal.sim.pollux import Application, load_applications, packed
from shoal.sim.trace import TraceError

ROOT = Path(__file__).resolve().parents[2]
POLLUX = ROOT.parent / "shared" / "traces" / "pollux"
TRACES = POLLUX / "traces"


@pytest.fixture(scope="module")
def apps() -> dict[str, Application]:
    return load_applications(TRACES)


def test_every_application_of_the_artifact_loads(apps: dict[str, Application]) -> None:
    assert sorted(apps) == ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
    assert apps["yolov3"].max_local == 8  # the artifact's limit for it
    assert apps["bert"].epochs == 2


def test_measured_step_times_are_read_back_and_interpolated_between(
        apps: dict[str, Application]) -> None:
    cifar = apps["cifar10"]
    # placements.csv: `1,32,0.0427886962890625,…` and `4,64,0.06841483116149902,…`.
    assert cifar.step_time(1, 32) == pytest.approx(0.0427886962890625)
    assert cifar.step_time(4, 256) == pytest.approx(0.06841483116149902)
    # Between the measured local batches 45 and 64 on one GPU: linear in the batch.
    low, high = cifar.step_time(1, 45), cifar.step_time(1, 64)
    between = cifar.step_time(1, 55)
    assert low < between < high
    assert between == pytest.approx(low + (high - low) * (55 - 45) / (64 - 45))
    assert packed(6) == "42" and packed(8) == "44" and packed(3) == "3"


def test_run_time_is_steps_times_step_time_with_accumulation(
        apps: dict[str, Application]) -> None:
    cifar = apps["cifar10"]
    steps = cifar.steps(2048)
    rows = (TRACES / "cifar10" / "validation-2048.csv").read_text().splitlines()
    assert steps == int(float(rows[100].split(",")[1]))  # the 100th epoch's iteration
    assert cifar.run_time(8, 2048) == pytest.approx(steps * cifar.step_time(8, 2048))
    # yolov3 measures per-replica batches up to 8: 16 each on 4 replicas is 2 micro-steps.
    yolo = apps["yolov3"]
    one_step = yolo.step_time(4, 32)
    assert yolo.step_time(4, 64) > one_step
    with pytest.raises(ValueError, match="batch size 100 was not validated"):
        cifar.steps(100)


def test_more_gpus_run_a_job_faster_up_to_its_batch(apps: dict[str, Application]) -> None:
    cifar = apps["cifar10"]
    times = [cifar.run_time(r, 2048) for r in (1, 2, 4, 8)]
    assert times == sorted(times, reverse=True)
    curve = cifar.speedup(2048, 8)
    assert curve.speedup(8) / curve.speedup(1) == pytest.approx(times[0] / times[3])
    assert cifar.max_replicas(2048) == 2048 // 32


def test_a_workload_becomes_gangs_of_one_gpu_replicas(apps: dict[str, Application],
                                                      tmp_path: Path) -> None:
    trace, work = load_pollux(POLLUX / "workloads" / "workload-1.csv", apps)
    assert len(trace.jobs) == 160 and trace.jobs[0].submit_time == 0.0
    first = next(j for j in trace.jobs if j.name == "cifar10-0")
    assert (first.replicas, first.per_task.gpu, first.model) == (6, 1, "cifar10@2048")
    assert first.duration == pytest.approx(apps["cifar10"].run_time(6, 2048))
    assert work.rate("cifar10@2048", 6, 3) == pytest.approx(
        apps["cifar10"].step_time(6, 2048) / apps["cifar10"].step_time(3, 2048))
    elastic, _ = load_pollux(POLLUX / "workloads" / "workload-1.csv", apps, elastic=True)
    assert next(j for j in elastic.jobs if j.name == "cifar10-0").elastic == \
        Elasticity("worker", 1, 6)


def test_a_job_that_adapts_its_batch_runs_at_the_best_one_for_its_replicas(
        apps: dict[str, Application]) -> None:
    """AdaptDL's choice under Pollux: on each replica count, the validated batch size that
    finishes soonest; larger batches need more samples (their step counts say so), so the
    best batch grows with the replicas rather than always being the largest."""
    cifar = apps["cifar10"]
    assert cifar.steps(4096) * 4096 > cifar.steps(128) * 128  # statistical efficiency
    best = {}
    for replicas in (1, 2, 4, 8, 16):
        options = {b: cifar.run_time(replicas, b) for b in cifar.iterations
                   if replicas <= cifar.max_replicas(b)}
        assert cifar.adaptive_run_time(replicas) == min(options.values())
        best[replicas] = min(options, key=lambda b: options[b])
    assert best[1] < best[16]
    curve = cifar.adaptive_speedup(16)
    assert curve.speedup(16) / curve.speedup(1) == pytest.approx(
        cifar.adaptive_run_time(1) / cifar.adaptive_run_time(16))
    adaptive, work = load_pollux(POLLUX / "workloads" / "workload-1.csv", apps,
                                 elastic=True, adaptive=True)
    first = next(j for j in adaptive.jobs if j.name == "cifar10-0")
    assert first.model == "cifar10+"
    assert first.duration == pytest.approx(cifar.adaptive_run_time(6))
    assert work.rate("cifar10+", 6, 3) == pytest.approx(
        cifar.adaptive_run_time(6) / cifar.adaptive_run_time(3))


@pytest.mark.parametrize(("row", "column", "reason"), [
    ("a,0,nope,1,32", "application", "unknown application 'nope'"),
    ("a,0,cifar10,1,100", "batch_size", "not validated at batch size 100"),
    ("a,0,cifar10,128,2048", "num_replicas", "fewer than 32 of the batch of 2048"),
    ("a,x,cifar10,1,2048", "time", "must be a non-negative number"),
    ("a,0,cifar10,0,2048", "num_replicas", "must be at least 1"),
])
def test_a_bad_row_is_refused_with_its_line_and_column(
        apps: dict[str, Application], tmp_path: Path, row: str, column: str,
        reason: str) -> None:
    path = tmp_path / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\n" + row + "\n")
    with pytest.raises(TraceError) as caught:
        load_pollux(path, apps)
    assert (caught.value.line, caught.value.column) == (2, column)
    assert reason in caught.value.message


def test_the_bench_prints_one_object_per_profile(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["elastic.py", "--workloads", "3",
                                      "--profiles", "fifo,elastic,las+adaptive"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "bench" / "elastic.py"), run_name="__main__")
    assert done.value.code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["profile"], r["jobs"]) for r in rows] == [
        ("fifo", "rigid"), ("elastic", "elastic"), ("las+adaptive", "adaptive")]
    for row in rows:
        assert {"profile", "mean_jct_s", "makespan_s", "utilization", "preemptions",
                "vs_fifo", "vs_published", "published_mean_jct_s"} <= set(row)
        assert row["unfinished"] == 0 and row["workloads"] == [3]
    assert rows[0]["vs_fifo"] == 1.0
