"""A cycle's launches handed to the launch workers in chunks (`shoal.control.inflight`): the
chunks start in bind order, up to the engine's lanes at once; a chunk's tasks are recorded
RUNNING from that chunk's results while the next is still launching, never before, and
never before the chunks ahead of it (a later chunk that ended first waits); an event's
cycle waits until every chunk in flight is done; and a crash between two chunks loses no
task and starts none twice (the next control plane launches the tasks left BOUND, and the
dead plane's late launches find their attempts claimed)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from control_support import DEADLINE, RUNS_UNTIL_STOPPED, job, wait_for

from shoal.api import TaskRef, TaskState
from shoal.control import ControlPlane, inflight
from shoal.control.inflight import Launch, LaunchFlights
from shoal.executors.task import RunningTask, TaskLaunch
from shoal.store.repository import TaskRecord


class HeldEngine:
    """An engine whose `launch_many` call number `held` (0-based) waits for `release`; it
    keeps each call's jobs and results."""

    def __init__(self, inner: Callable[[Sequence[TaskLaunch]],
                                       list[RunningTask | BaseException]],
                 held: int) -> None:
        self.inner = inner
        self.held = held
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls: list[list[str]] = []
        self.results: list[list[RunningTask | BaseException]] = []
        self.lock = threading.Lock()  # two lanes call at once

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        with self.lock:
            self.calls.append([spec.job for spec in specs])
            held = len(self.calls) - 1 == self.held
        if held:
            self.entered.set()
            assert self.release.wait(DEADLINE)
        results = self.inner(specs)
        with self.lock:
            self.results.append(results)
        return results


def _records(plane: ControlPlane, names: list[str]) -> dict[str, TaskRecord]:
    records = plane.repository.task_records(names)
    return {name: records[TaskRef(name, "worker", 0)] for name in names}


def test_chunks_are_recorded_from_their_own_results_and_a_crash_between_them_loses_none(
        make_plane: Callable[[], ControlPlane], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inflight, "CHUNK", 2)
    plane = make_plane()
    plane.start()
    engine = HeldEngine(plane.executor.launch_many, held=1)
    plane.executor.launch_many = engine.launch_many  # type: ignore[method-assign]
    assert plane._flights.lanes == 2  # the local executor's: the third chunk goes beside
    plane._looping = True  # as under `run_forever`: the cycle's batch goes to the worker
    names = [f"j{i}" for i in range(5)]
    for name in names:
        plane.submit(job(name, RUNS_UNTIL_STOPPED))
    decisions = plane.step()  # one cycle binds all five
    bound = [b.task.job for b in decisions.binds]
    assert sorted(bound) == names
    assert engine.entered.wait(DEADLINE)
    # The first chunk's starts are recorded from its results; the second is held in the
    # engine, and the third, launched beside it, waits behind it: theirs are not, whatever
    # the loop takes up.
    wait_for(lambda: len(engine.results) == 2)  # the first and the third launched
    wait_for(lambda: plane._settle_launches(wait=False)
             or _records(plane, bound[:2])[bound[0]].state is TaskState.RUNNING)
    assert not plane._settle_launches(wait=False)  # the third is not taken up yet
    records = _records(plane, names)
    first = {r.job: r.pid for r in engine.results[0] if isinstance(r, RunningTask)}
    assert {n: (records[n].state, records[n].pid) for n in bound[:2]} \
        == {n: (TaskState.RUNNING, first[n]) for n in bound[:2]}
    assert {n: (records[n].state, records[n].pid) for n in bound[2:]} \
        == {n: (TaskState.BOUND, None) for n in bound[2:]}
    assert engine.calls == [bound[:2], bound[2:4], bound[4:]]  # started in bind order

    # A crash now: the next control plane adopts the first chunk and launches the rest.
    after = make_plane()
    after.start()
    records = _records(after, names)
    assert all(rec.state is TaskState.RUNNING and rec.pid for rec in records.values())
    assert {n: records[n].pid for n in bound[:2]} == first
    # The dead plane's worker, let go, finds those attempts claimed: no second process.
    engine.release.set()
    plane._flights.close()
    assert len(engine.calls) == 3
    late = {r.job: r.pid for chunk in engine.results[1:] for r in chunk
            if isinstance(r, RunningTask)}
    assert late == {n: records[n].pid for n in bound[2:]}


class _Blocking:
    """`launch_many` that returns its handles only when its call's event is set."""

    def __init__(self, calls: int, lanes: int = 1) -> None:
        self.go = [threading.Event() for _ in range(calls)]
        self.count = 0
        self.launch_lanes = lanes
        self.lock = threading.Lock()

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        with self.lock:
            event = self.go[self.count]
            self.count += 1
        assert event.wait(DEADLINE)
        return [RunningTask(s.job, s.group, s.index, s.attempt, 0, 0.0, Path("out"),
                            Path("err"), Path("status")) for s in specs]


def _ref(name: str) -> TaskRef:
    return TaskRef(name, "worker", 0)


def _launch(name: str) -> Launch:
    rec = TaskRecord(_ref(name), TaskState.BOUND, "local", (), None, None, 1,
                     None)
    spec = TaskLaunch(job=name, group="worker", index=0, world_size=1, rank=0,
                      master_addr="127.0.0.1", master_port=1, gpus=(), command=("true",),
                      env={}, working_dir=None, attempt=1)
    return Launch(rec, spec)


def test_chunks_are_taken_up_in_order_and_a_cycle_waits_for_every_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inflight, "CHUNK", 2)
    engine = _Blocking(3)
    flights = LaunchFlights(engine, lambda: None)  # type: ignore[arg-type]
    flights.hand_over([_launch(f"j{i}") for i in range(5)])
    try:
        assert not flights.has_room() and _ref("j4") in flights
        engine.go[1].set()  # the first chunk is held: nothing is taken up (the second goes
        # as soon as the worker starts it)
        assert list(flights.done(wait=False)) == []
        second = flights._flights[1]
        engine.go[0].set()
        wait_for(second.future.done)
        assert not flights.has_room()  # the last chunk still launches
        taken = [[launch.rec.ref.job for launch, _ in chunk]
                 for chunk in flights.done(wait=False)]
        assert taken == [["j0", "j1"], ["j2", "j3"]]
        assert _ref("j1") not in flights and _ref("j4") in flights
        engine.go[2].set()
        wait_for(flights.has_room)
        assert [[launch.rec.ref.job for launch, _ in chunk]
                for chunk in flights.done(wait=True)] == [["j4"]]
        assert not flights
    finally:
        for event in engine.go:
            event.set()
        flights.close()


def test_two_lanes_launch_two_chunks_at_once_and_the_loop_takes_them_up_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inflight, "CHUNK", 2)
    engine = _Blocking(4, lanes=2)
    flights = LaunchFlights(engine, lambda: None)  # type: ignore[arg-type]
    assert flights.lanes == 2
    flights.hand_over([_launch(f"j{i}") for i in range(5)])
    try:
        first, second = flights._flights[0], flights._flights[1]
        engine.go[1].set()  # the second chunk ends while the first is still in the engine
        wait_for(second.future.done)
        assert not first.future.done()
        wait_for(lambda: engine.count == 3)  # the freed lane takes the third up
        assert list(flights.done(wait=False)) == []  # the second waits behind the first
        engine.go[0].set()
        wait_for(first.future.done)
        assert [[launch.rec.ref.job for launch, _ in chunk]
                for chunk in flights.done(wait=False)] == [["j0", "j1"], ["j2", "j3"]]
        assert not flights.has_room() and _ref("j4") in flights
        engine.go[2].set()
        assert [[launch.rec.ref.job for launch, _ in chunk]
                for chunk in flights.done(wait=True)] == [["j4"]]
        # A batch of less than two full chunks is split over both lanes.
        flights.hand_over([_launch(f"k{i}") for i in range(3)])
        assert [len(flight.launches) for flight in flights._flights] == [2, 1]
    finally:
        for event in engine.go:
            event.set()
        flights.close()
