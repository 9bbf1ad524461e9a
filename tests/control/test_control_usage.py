"""Issue 17's decayed usage, live: the control plane charges what runs each cycle, on its
clock, keeps the ledger in the store, and a control plane started after a crash goes on
from the stored ledger instead of from nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from control_support import job, state_of, step_until, until_exists

from shoal.api import DEFAULT_QUEUE, JobState
from shoal.control import ControlPlane
from shoal.core.usage import DEFAULT_HALF_LIFE, UsageKey, Used

KEY = UsageKey(DEFAULT_QUEUE, "alice")


def _gpu_seconds(plane: ControlPlane) -> float:
    return plane.model.usage.entries.get(KEY, Used()).gpu


def test_usage_is_charged_and_kept_across_a_restart(
        make_plane: Callable[[], ControlPlane], tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = until_exists(go)
    plane = make_plane()
    plane.start()
    plane.submit(replace(job("busy", code, gpu=1), user="alice"))
    step_until(plane, lambda: state_of(plane, "busy") is JobState.RUNNING)
    step_until(plane, lambda: _gpu_seconds(plane) > 0)
    stored = plane.repository.load_usage(DEFAULT_HALF_LIFE)
    assert stored.entries[KEY].gpu > 0
    assert stored.at is not None and stored.at <= plane.model.now

    again = make_plane()  # the first one crashed; its task runs on
    again.start()
    assert again.model.usage == stored
    before = _gpu_seconds(again)
    step_until(again, lambda: _gpu_seconds(again) > before)
    go.touch()
    step_until(again, lambda: state_of(again, "busy").terminal)
