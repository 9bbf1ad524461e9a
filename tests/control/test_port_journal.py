"""The ports journal (`shoal.control.port_journal`): a job's ports read back after a restart,
a line torn by a crash skipped, the per-job files of earlier versions read and removed with
their job, and a journal that never grows past its live jobs by more than a bound."""

from __future__ import annotations

import json
from pathlib import Path

from shoal.control.port_journal import COMPACT_AFTER, JOURNAL, PortJournal
from shoal.control.records import MasterPorts


def test_ports_are_read_back_and_an_ended_job_is_not(tmp_path: Path) -> None:
    journal = PortJournal(tmp_path)
    journal.put("a", {"w/0": 5000, "w/1": 5001})
    journal.put("b", {"w/0": 5002})
    journal.put("a", {"w/0": 5000, "w/1": 5001, "w/2": 5003})  # a group grew
    journal.drop("b")
    journal.close()
    again = PortJournal(tmp_path)
    assert again.jobs() == {"a": {"w/0": 5000, "w/1": 5001, "w/2": 5003}}
    assert [p.name for p in tmp_path.iterdir()] == [JOURNAL]


def test_a_torn_last_line_is_as_if_never_written(tmp_path: Path) -> None:
    journal = PortJournal(tmp_path)
    journal.put("a", {"": 6000})
    journal.close()
    with (tmp_path / JOURNAL).open("a") as f:
        f.write('{"job":"b","ports":{"":60')  # the server died half-way through a write
    assert PortJournal(tmp_path).jobs() == {"a": {"": 6000}}
    masters = MasterPorts(tmp_path, lambda: 6001)
    assert masters.known("b") is None and masters.get("b") == 6001  # chosen afresh
    # What is written after the torn line is read whole after the next restart.
    assert PortJournal(tmp_path).jobs() == {"a": {"": 6000}, "b": {"": 6001}}


def test_per_job_files_of_earlier_versions_are_kept_until_their_job_ends(
        tmp_path: Path) -> None:
    (tmp_path / "old").write_text(json.dumps({"w/0": 7000}))
    (tmp_path / "master").write_text("7001")
    journal = PortJournal(tmp_path)
    assert journal.jobs() == {"old": {"w/0": 7000}, "master": {"": 7001}}
    journal.drop("old")
    assert not (tmp_path / "old").exists()
    journal.close()
    assert PortJournal(tmp_path).jobs() == {"master": {"": 7001}}


def test_ended_jobs_lines_are_dropped_from_the_journal(tmp_path: Path) -> None:
    journal = PortJournal(tmp_path)
    journal.put("live", {"": 1})
    for i in range(3 * COMPACT_AFTER):
        journal.put(f"j{i}", {"": 2})
        journal.drop(f"j{i}")
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    assert len(lines) <= COMPACT_AFTER + 2
    journal.put("after", {"": 3})
    journal.close()
    assert PortJournal(tmp_path).jobs() == {"live": {"": 1}, "after": {"": 3}}
