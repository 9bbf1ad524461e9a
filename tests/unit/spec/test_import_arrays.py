"""Job arrays: the index expressions (Slurm's `--array`, Shoal's `spec.array`) expand to
exactly the sets they name and are bounded before anything is expanded (properties), Slurm
time strings parse monotonically and round-trip, and a native `spec.array` becomes one
job per index through the loader."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoal.spec import SpecError, load_text
from shoal.spec.imports import ImportFormat
from shoal.spec.imports.arrays import MAX_ARRAY_JOBS, ArrayError, parse_array
from shoal.spec.imports.slurm_header import parse_time

parts = st.tuples(st.integers(0, 5000), st.integers(0, 300), st.integers(1, 50))


def written(first: int, length: int, step: int) -> tuple[str, set[int]]:
    last = first + length
    if length == 0:
        return str(first), {first}
    if step == 1:
        return f"{first}-{last}", set(range(first, last + 1))
    return f"{first}-{last}:{step}", set(range(first, last + 1, step))


@given(st.lists(parts, min_size=1, max_size=6))
def test_an_expression_names_exactly_its_indices_or_is_refused_as_too_large(
        chosen: list[tuple[int, int, int]]) -> None:
    pieces = [written(*p) for p in chosen]
    expression = ",".join(text for text, _ in pieces)
    wanted = set().union(*(indices for _, indices in pieces))
    counted = sum(len(indices) for _, indices in pieces)
    if counted > MAX_ARRAY_JOBS:
        with pytest.raises(ArrayError, match=f"at most {MAX_ARRAY_JOBS} jobs"):
            parse_array(expression)
    else:
        assert parse_array(expression).indices == tuple(sorted(wanted))


def test_a_huge_range_is_refused_by_its_count() -> None:
    with pytest.raises(ArrayError, match="at most 1000 jobs, '0-999999' holds more"):
        parse_array("0-999999")


@pytest.mark.parametrize(("expression", "message"), [
    ("", "must be an index expression"), ("1-", "must be an index expression"),
    ("5-2", "must not end before it starts"), ("0-10:0", "step must be at least 1"),
    ("0-9%2", "throttle"), ("1,,2", "must be an index expression"),
    ("-1", "must be an index expression"), ("0-" + "9" * 8, "must be an index expression"),
    ("1" * 300, "at most 256 characters")])
def test_malformed_expressions_are_refused(expression: str, message: str) -> None:
    with pytest.raises(ArrayError, match=message):
        parse_array(expression)


times = st.tuples(st.integers(0, 364), st.integers(0, 23), st.integers(0, 59),
                  st.integers(0, 59))


@given(times)
def test_slurm_times_round_trip_through_their_longest_form(t: tuple[int, int, int, int]
                                                           ) -> None:
    days, hours, minutes, seconds = t
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    assert parse_time(f"{days}-{hours:02}:{minutes:02}:{seconds:02}") == (total or None)
    if days == 0:
        assert parse_time(f"{hours}:{minutes:02}:{seconds:02}") == (total or None)
        if hours == 0:
            assert parse_time(f"{minutes}:{seconds:02}") == (total or None)


@given(times, times)
def test_slurm_times_are_monotonic(a: tuple[int, int, int, int],
                                   b: tuple[int, int, int, int]) -> None:
    def seconds(t: tuple[int, int, int, int]) -> int:
        return parse_time("{}-{:02}:{:02}:{:02}".format(*t)) or 0
    assert (seconds(a) <= seconds(b)) == (a <= b)


JOB = textwrap.dedent("""\
    apiVersion: shoal/v1
    kind: Job
    metadata: {name: sweep, annotations: {team: vision}}
    spec:
      array: {array}
      taskGroups:
        - name: main
          replicas: 1
          resources: {cpu: 1}
          env: {LR: '0.1'}
          command: [python, sweep.py]
    """)


def test_a_native_array_becomes_one_job_per_index() -> None:
    bundle = load_text(JOB.replace("{array}", "'1-3,7'"))
    assert [j.name for j in bundle.jobs] == ["sweep-1", "sweep-2", "sweep-3", "sweep-7"]
    for job in bundle.jobs:
        index = job.name.rsplit("-", 1)[1]
        assert job.groups[0].env == {"LR": "0.1", "SHOAL_ARRAY_INDEX": index}
        assert job.annotations == {"team": "vision", "shoal/array": "sweep",
                                   "shoal/array-index": index}
        assert bundle.originals[job.name].format is ImportFormat.SHOAL_ARRAY


@pytest.mark.parametrize(("array", "message"), [
    ("'0-2%1'", "throttle"), ("5", "(a string)"), ("'0-1500'", "at most 1000 jobs")])
def test_a_bad_native_array_is_refused_at_spec_array(array: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_text(JOB.replace("{array}", array))
    (issue,) = caught.value.issues
    assert issue.path == "spec.array" and message in issue.message


def test_an_element_name_too_long_is_refused_at_the_name() -> None:
    with pytest.raises(SpecError) as caught:
        load_text(JOB.replace("{array}", "'0'").replace("sweep", "s" * 252))
    assert {i.path for i in caught.value.issues} == {"metadata.name"}


def test_a_broken_array_document_is_checked_as_a_job() -> None:
    with pytest.raises(SpecError) as caught:
        load_text(JOB.replace("{array}", "'0-1'").replace("  taskGroups:", "  groups:"))
    assert "spec.taskGroups" in {i.path for i in caught.value.issues}


def test_an_array_whose_copies_would_be_too_much_to_check_is_refused() -> None:
    """Every element is validated on its own, so the size of them all is bounded before a
    copy is made: a long script, or a long command, 1000 times."""
    long_line = "echo " + "x" * 8000 + "\n"
    text = "#!/bin/sh\n#SBATCH -J big --array=0-999\n" + long_line * 35
    with pytest.raises(SpecError) as caught:
        load_text(text)
    (issue,) = caught.value.issues
    assert issue.path == "#SBATCH --array" and "1000 copies" in issue.message
    args = ", ".join(["x"] * 2500)
    native = JOB.replace("{array}", "'0-999'").replace("[python, sweep.py]", f"[{args}]")
    with pytest.raises(SpecError) as caught:
        load_text(native)
    (issue,) = caught.value.issues
    assert issue.path == "spec.array" and "values together" in issue.message
