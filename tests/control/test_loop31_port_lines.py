"""A batch's port journal lines held back (`PortJournal.deferred`, `endpoints.lines_held`):
nothing reaches the file within, one `write` on leaving — even when the block raised —, the
journal then reads back exactly as if each line had been written as it came, a compaction
inside the batch loses nothing, and a control loop's launches find their ports on disk
before the launcher gets the batch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoal.api import Job, Resources, SchedulerName, TaskGroup
from shoal.control import port_journal
from shoal.control.endpoints import Endpoints, TaskPorts, lines_held
from shoal.control.launching import NodeAddresses
from shoal.control.port_journal import COMPACT_AFTER, JOURNAL, PortJournal
from shoal.control.records import MasterPorts


def _steps(journal: PortJournal, jobs: int) -> None:
    for i in range(jobs):
        journal.put(f"j{i}", {"w/0": 5000 + i})
        if i % 3 == 0:
            journal.drop(f"j{i}")
    journal.put("j1", {"w/0": 5001, "w/1": 7001})  # a group grew


def test_held_lines_are_one_write_and_read_back_as_written_one_by_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = PortJournal(tmp_path / "plain")
    _steps(plain, 20)
    plain.close()
    writes: list[int] = []
    real = os.write

    def counted(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return real(fd, data)

    monkeypatch.setattr(port_journal.os, "write", counted)
    held = PortJournal(tmp_path / "held")
    with held.deferred():
        _steps(held, 20)
        assert held.get("j1") == {"w/0": 5001, "w/1": 7001}  # answered at once
        assert writes == [] and not (tmp_path / "held" / JOURNAL).exists()
        with held.deferred():  # nested: the outer one writes
            held.put("late", {"": 9000})
        assert writes == []
    assert len(writes) == 1
    held.close()
    late = b'{"job":"late","ports":{"":9000}}\n'
    assert (tmp_path / "held" / JOURNAL).read_bytes() \
        == (tmp_path / "plain" / JOURNAL).read_bytes() + late
    assert PortJournal(tmp_path / "held").jobs() == {**PortJournal(tmp_path / "plain").jobs(),
                                                     "late": {"": 9000}}


def test_held_lines_are_written_when_the_batch_raises(tmp_path: Path) -> None:
    journal = PortJournal(tmp_path)
    with pytest.raises(RuntimeError), journal.deferred():
        journal.put("a", {"": 6000})
        raise RuntimeError("a launch's spec failed")
    journal.close()
    assert PortJournal(tmp_path).jobs() == {"a": {"": 6000}}


def test_a_compaction_inside_a_batch_keeps_every_live_job(tmp_path: Path) -> None:
    journal = PortJournal(tmp_path)
    with journal.deferred():
        for i in range(COMPACT_AFTER + 10):  # enough ended jobs to compact mid-batch
            journal.put(f"e{i}", {"": 1000 + i})
            journal.drop(f"e{i}")
        journal.put("kept", {"": 42})
    journal.close()
    assert PortJournal(tmp_path).jobs() == {"kept": {"": 42}}
    assert len((tmp_path / JOURNAL).read_bytes().splitlines()) < COMPACT_AFTER


def test_launch_ports_are_on_disk_when_the_held_lines_are_let_go(tmp_path: Path) -> None:
    picks = iter(range(40000, 40100))
    task_ports = TaskPorts(tmp_path / "task-ports", lambda: next(picks))
    masters = MasterPorts(tmp_path / "master-ports", task_ports.fresh)
    endpoints = Endpoints(task_ports, NodeAddresses(), masters.get, masters.known)
    job = Job("a", (TaskGroup("w", 2, Resources.of(cpu=1, memory=1)),),
              scheduler_name=SchedulerName.DEFAULT)
    with lines_held(endpoints, masters):
        master = masters.get("a")
        ports = task_ports.ports(job, (master,))
        assert PortJournal(tmp_path / "task-ports").jobs() == {}
    assert PortJournal(tmp_path / "task-ports").jobs() == {"a": ports}
    assert PortJournal(tmp_path / "master-ports").jobs() == {"a": {"": master}}
    with lines_held(endpoints, masters):
        endpoints.forget("a")
        masters.forget("a")
    assert PortJournal(tmp_path / "task-ports").jobs() == {}
    assert PortJournal(tmp_path / "master-ports").jobs() == {}
