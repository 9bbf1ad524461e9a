"""bench/slurm_member.py runs both paths on a real Slurm and prints the documented JSON (its
timings are not tested)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "slurm_member.py"


def test_slurm_member_bench_prints_both_paths_and_their_ratio() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--copies", "2"], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row.get("path") for row in rows[:2]] == ["slurmrestd-adapter", "sbatch-cli"]
    for row in rows[:2]:
        assert row["copies"] == 2 and row["calls"] >= 4
        assert row["wall_s"] > 0 and row["process_cpu_s"] >= 0
    assert rows[2]["ratio"] == "slurmrestd-adapter / sbatch-cli"
    assert rows[2]["wall"] > 0 and rows[2]["process_cpu"] >= 0
