"""What `shoal up` says at start about its tasks' isolation: a server that is not root
refuses tasks and says why; one that switches users names the work root; where no cgroup
hierarchy is writable it says once that tasks run without limits."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from task_users import Scratch

from shoal.cli.serve import _Tasks
from shoal.executors import cgroups
from shoal.executors.isolation import Mode, decide


def start(tasks: _Tasks, root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    out = io.StringIO()
    tasks.isolation(Console(file=out, width=200), root)
    return out.getvalue(), capsys.readouterr().err


def test_not_root_says_tasks_are_refused_and_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cgroups, "detect", lambda tag: cgroups.Unavailable("none here"))
    tasks = _Tasks(decide(1000, insecure_same_user=False, task_user=None), tmp_path / "w")
    _, err = start(tasks, tmp_path / "executor", capsys)
    assert "WARNING" in err and "not root" in err and "--insecure-same-user" in err
    assert err.count("no writable cgroup hierarchy (none here)") == 1
    assert not (tmp_path / "w").exists()  # no work root for tasks that never run


def test_insecure_same_user_is_loud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cgroups, "detect", lambda tag: cgroups.Unavailable("none here"))
    tasks = _Tasks(decide(0, insecure_same_user=True, task_user=None), tmp_path / "w")
    _, err = start(tasks, tmp_path / "executor", capsys)
    assert "WARNING: INSECURE" in err and "admin token" in err


def test_switching_users_names_the_work_root_and_the_cgroups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    parent = tmp_path / "cg"
    found = cgroups.TaskCgroups(cgroups.CgroupVersion.V1, parent, None)
    monkeypatch.setattr(cgroups, "detect", lambda tag: found)
    scratch = Scratch()
    try:
        tasks = _Tasks(decide(0, insecure_same_user=False, task_user=None), scratch.work)
        isolation = tasks.isolation(Console(file=io.StringIO()), tmp_path / "executor")
        assert isolation.policy.mode is Mode.PER_USER and isolation.cgroups is found
        assert isolation.work_root == scratch.work
        out, err = start(tasks, tmp_path / "executor", capsys)
        assert f"working directories under {scratch.work}" in out
        assert "memory limits" in out and str(parent) in out and err == ""
    finally:
        scratch.close()
