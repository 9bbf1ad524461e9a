"""bench/api.py runs against a real `shoal up` on each engine — local, and Ray on a Ray
cluster the benchmark starts itself — and prints the documented JSON keys for each, side by
side; every submission it times was accepted and every job it waits for started (it exits
otherwise). Its rates and latencies are not tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "api.py"
PER_ENGINE = ("submissions_per_second", "yaml_submissions_per_second",
              "client_submissions_per_second", "health_checks_per_second",
              "submission_vs_health", "submit_to_running_p50_ms", "submit_to_running_p99_ms",
              "server_cpu_s")


def test_api_bench_prints_both_engines_side_by_side() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--submissions", "20",
                           "--latency-jobs", "2", "--engines", "local,ray"],
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["engines"] == ["local", "ray"]
    for engine in ("local", "ray"):
        for key in PER_ENGINE:
            assert out[engine][key] > 0, (engine, key)
    assert set(out["ray_vs_local"]) == {"submit_to_running_p50_ms", "submit_to_running_p99_ms",
                                        "submissions_per_second"}
    assert all(value > 0 for value in out["ray_vs_local"].values())
    assert out["submissions"] == 20 and out["latency_jobs"] == 2 and out["wall_s"] > 0


def test_api_bench_refuses_an_unknown_engine() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--engines", "local,slurm"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--engines" in done.stderr and "'local,slurm'" in done.stderr


def test_api_bench_burst_case_starts_every_job() -> None:
    # The burst case exits (non-zero) unless every job it submitted started; Slurm is left
    # out here (installing and starting it is the benchmark's business, not the test's).
    done = subprocess.run([sys.executable, str(BENCH), "--burst", "12", "--burst-clients",
                           "3", "--slurm", "off"],
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["case"], out["jobs"], out["clients"], out["slurm"]) == ("burst", 12, 3, None)
    for key in ("started_per_second", "submit_to_running_p50_ms", "submit_to_running_p99_ms",
                "daemon_cpu_ms_per_job", "wall_s", "clients_cpu_ms_per_job",
                "machine_busy_cpu_s"):
        assert out["shoal"][key] > 0, key
    # Every process Shoal runs includes the server and its launcher, and the tasks'
    # wrappers and commands besides.
    assert out["shoal"]["all_processes_cpu_ms_per_job"] > out["shoal"]["daemon_cpu_ms_per_job"]
    assert 1 <= out["shoal"]["bind_cycles"] <= 12


def test_api_bench_burst_case_runs_a_baseline_checkout_in_the_same_rounds() -> None:
    # This checkout as its own baseline: both servers start every job, and the ratios are
    # of the same run.
    checkout = BENCH.resolve().parent.parent
    done = subprocess.run([sys.executable, str(BENCH), "--burst", "8", "--burst-clients",
                           "2", "--slurm", "off", "--baseline", str(checkout)],
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["baseline_checkout"] == str(checkout) and out["slurm"] is None
    for side in ("shoal", "baseline"):
        assert out[side]["started_per_second"] > 0 and out[side]["daemon_cpu_s"] > 0, side
    assert out["shoal_vs_baseline_all_processes_cpu_per_job"] == round(
        out["shoal"]["all_processes_cpu_ms_per_job"]
        / out["baseline"]["all_processes_cpu_ms_per_job"], 2)
    assert out["shoal_vs_baseline_start_rate"] == round(
        out["shoal"]["started_per_second"] / out["baseline"]["started_per_second"], 2)
