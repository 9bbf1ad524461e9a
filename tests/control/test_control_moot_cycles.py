"""Submissions into a full cluster skip the cycle they would trigger (`run_forever`): the
job gets its reason without one, and is placed by the cycle that the end of a running job
triggers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from control_support import RUNS_UNTIL_STOPPED, job, state_of, wait_for

from shoal.api import JobState
from shoal.control import ControlPlane
from shoal.control.loop import UNPLACEABLE_NOW
from shoal.server.metrics import ShoalMetrics


def test_a_full_cluster_takes_submissions_without_cycles(
        make_plane: Callable[[], ControlPlane]) -> None:
    plane = make_plane()
    plane.interval = 3600.0  # no periodic cycle: every cycle here is one an event asked for
    plane.observer = metrics = ShoalMetrics()
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,), daemon=True)
    loop.start()
    try:
        plane.submit(job("blocker", RUNS_UNTIL_STOPPED, gpu=4))
        wait_for(lambda: state_of(plane, "blocker") is JobState.RUNNING)
        # The cycle after the blocker's bind decided something, so the next one runs: it
        # places nothing and settles the model.
        plane.submit(job("queued-0", "pass", gpu=1))
        wait_for(lambda: plane.pending_reason("queued-0") is not None)
        cycles = plane.cycles
        for i in range(1, 5):
            plane.submit(job(f"queued-{i}", "pass", gpu=1))
        wait_for(lambda: all(plane.pending_reason(f"queued-{i}") == UNPLACEABLE_NOW
                             for i in range(1, 5)))
        assert plane.cycles == cycles  # four submissions, no cycle
        # Each skip is counted (submissions that come together share one), each cycle too.
        assert (metrics.registry.get_sample_value("shoal_cycles_skipped_total") or 0) >= 1
        assert metrics.registry.get_sample_value("shoal_cycle_duration_seconds_count") \
            == cycles
        # The reason joins the job's history with the next write of noted reasons.
        wait_for(lambda: [e.cause for e in plane.repository.job_events("queued-3")
                          if e.kind == "Waiting"]
                 == [f"{UNPLACEABLE_NOW.kind.value}: {UNPLACEABLE_NOW.message}"])

        plane.submit(job("cpu-only", "pass"))  # fits beside the blocker: this one cycles
        wait_for(lambda: state_of(plane, "cpu-only") is JobState.SUCCEEDED)
        assert plane.cycles > cycles

        plane.cancel("blocker")  # its end frees the GPUs: the queued jobs run
        wait_for(lambda: all(state_of(plane, f"queued-{i}") is JobState.SUCCEEDED
                             for i in range(5)))
    finally:
        stop.set()
        loop.join(timeout=10)


def test_a_submission_without_a_wake_up_is_taken_up_at_the_next_turn(
        make_plane: Callable[[], ControlPlane]) -> None:
    """The API wakes the loop only after its answer is sent; should that wake-up never come
    (the client went away), the loop still runs the job: queued commands count as one."""
    plane = make_plane()
    plane.interval = 3600.0  # no periodic cycle to hide a missing wake-up
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,), daemon=True)
    loop.start()
    try:
        time.sleep(0.3)  # the loop's start-up cycle is over: it waits for events
        cycles = plane.cycles
        plane.submit(job("quiet", "pass"), wake=False)
        wait_for(lambda: state_of(plane, "quiet") is JobState.SUCCEEDED)
        assert plane.cycles > cycles
    finally:
        stop.set()
        loop.join(timeout=10)


def test_introspection_is_answered_by_the_loop_while_it_runs(
        make_plane: Callable[[], ControlPlane]) -> None:
    plane = make_plane()
    plane.submit(job("held", RUNS_UNTIL_STOPPED, gpu=2))
    plane.step()
    quiet = plane.virtual_cluster_status()  # no loop: read here
    assert quiet["default"].running_tasks == 1 and quiet["root"].used.gpu == 2
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,), daemon=True)
    loop.start()
    try:
        wait_for(lambda: plane.looping)
        assert plane.virtual_cluster_status() == quiet  # asked of the loop's thread
        plane.cancel("held")
        wait_for(lambda: plane.virtual_cluster_status()["root"].used.gpu == 0)
    finally:
        stop.set()
        loop.join(timeout=10)
