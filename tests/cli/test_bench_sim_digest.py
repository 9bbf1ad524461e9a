"""bench/sim_digest.py fingerprints a replay's decisions: the same replay gives the same
digest, a different one another (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "sim_digest.py"
SAMPLE = ROOT / "examples" / "traces" / "philly-sample.csv"


def digests(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--trace", str(SAMPLE), *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_replay_has_one_digest_and_another_replay_another(
        capsys: pytest.CaptureFixture[str]) -> None:
    first = digests(capsys, "--jobs", "60", "--cluster", "2x8", "--profiles", "las,fifo")
    again = digests(capsys, "--jobs", "60", "--cluster", "2x8", "--profiles", "las,fifo")
    assert [o["profile"] for o in first] == ["las", "fifo"]
    for one, two in zip(first, again, strict=True):
        assert one["records_sha256"] == two["records_sha256"]
        assert one["samples_sha256"] == two["samples_sha256"]
        assert one["jobs"] == 60 and float(str(one["cpu_seconds"])) >= 0
    fewer = digests(capsys, "--jobs", "59", "--cluster", "2x8", "--profiles", "las")
    assert fewer[0]["records_sha256"] != first[0]["records_sha256"]
