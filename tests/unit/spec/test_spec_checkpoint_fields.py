"""Issue 17's `spec.checkpointInterval` as documents write it, and the errors that name it."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, SOURCE, expect, issues, one_issue

from shoal.spec import load_text


def with_interval(value: str) -> str:
    return JOB.replace("spec:\n", f"spec:\n  checkpointInterval: {value}\n")


@pytest.mark.parametrize(("given", "seconds"), [("60", 60.0), ("0.5", 0.5), ("10m0s", 600.0),
                                                ("'1h30m'", 5400.0)])
def test_the_interval_is_read_in_seconds(given: str, seconds: float) -> None:
    assert load_text(with_interval(given), SOURCE).jobs[0].checkpoint_interval == seconds


def test_no_interval_is_none() -> None:
    assert load_text(JOB, SOURCE).jobs[0].checkpoint_interval is None


@pytest.mark.parametrize("given", ["0", "-5", "soon", "'0s'"])
def test_a_bad_interval_is_named(given: str) -> None:
    expect(one_issue(with_interval(given)), f"{JOB_1}spec.checkpointInterval: ", "positive")


@pytest.mark.parametrize("given", [".nan", ".inf", "true"])
def test_a_value_of_the_wrong_type_is_named(given: str) -> None:
    found = [str(i) for i in issues(with_interval(given))]
    assert found and all(line.startswith(f"{JOB_1}spec.checkpointInterval: ")
                         for line in found), found


def test_a_huge_value_is_quoted_bounded() -> None:
    line = one_issue(with_interval("x" * 100_000))
    expect(line, f"{JOB_1}spec.checkpointInterval: ", "positive")
    assert len(line) < 1000
