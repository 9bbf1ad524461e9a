"""Fair share's job field (seed 002) as documents write it, and the errors that name it."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, SOURCE, issues

from shoal.spec import load_text


def with_window(value: str) -> str:
    return JOB.replace("spec:\n", f"spec:\n  freezingWindow: {value}\n")


@pytest.mark.parametrize(("value", "seconds"), [("90", 90.0), ("2.5", 2.5), ("5m", 300.0),
                                                 ("'1h30m'", 5400.0), ("0", 0.0)])
def test_freezing_window_is_read_in_seconds(value: str, seconds: float) -> None:
    assert load_text(with_window(value), SOURCE).jobs[0].freezing_window == seconds


def test_no_freezing_window_leaves_the_profiles_default() -> None:
    assert load_text(JOB, SOURCE).jobs[0].freezing_window is None


@pytest.mark.parametrize(("value", "fragment"), [
    ("-1", "must not be negative"),
    ("'ten minutes'", "expected seconds or a duration"),
    (".inf", "finite"),
    (f"'{'9' * 5000}m'", "finite"),
])
def test_a_bad_freezing_window_is_named(value: str, fragment: str) -> None:
    lines = [str(i) for i in issues(with_window(value))]
    assert all(line.startswith(f"{JOB_1}spec.freezingWindow: ") for line in lines), lines
    assert any(fragment in line for line in lines), lines
    assert all(len(line) < 500 for line in lines)  # what was given is echoed only in part
