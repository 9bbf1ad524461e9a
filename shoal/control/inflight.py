"""Launches in flight: batches of launches that a worker thread carries out while the
control loop (`shoal.control.loop`) goes on serving — the loop's side of
`Executor.launch_many` when it runs off the loop's thread.

Why. Starting processes is round trips to the engine (the local executor's launcher, a Ray
node's supervisor) and file-system work per task (claims, cgroups, working directories); done on
the loop's thread, a burst's next cycle, polls and recorded exits waited behind them. A
worker takes a cycle's batch instead, and the loop takes its results up on a later turn.

What stays ordered. Only the worker calls `launch_many`, one batch at a time, in the order
they were handed over; it touches neither the store nor the scheduler model. Everything
else — building the specs, recording the starts, stopping, evicting — stays on the loop's
thread, which takes a batch's results up whole (`LaunchFlights.done`) in hand-over order.
The loop records a task RUNNING only from its batch's results, so never before its launch
claimed the attempt durably. And whatever may stop, evict or fail a task whose launch is in
flight first waits for the batches in flight and takes their results up
(`Launching._settle_launches`): the task is then tracked with its process, and the stop
reaches it (or, when a failed launch of the job taken up just then stopped the job
already, finds nothing more to do). A crash while a batch is in flight leaves its tasks
BOUND in the store, launched at restart as before (each launch is idempotent per attempt).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from shoal.api import TaskRef
from shoal.executors.contract import Executor
from shoal.executors.task import RunningTask, TaskLaunch
from shoal.store.repository import TaskRecord

LaunchResult = RunningTask | BaseException


@dataclass(frozen=True, slots=True)
class Launch:
    """One bound task handed to the engine: its record when it was judged launchable, and
    what the engine is asked to start."""

    rec: TaskRecord
    spec: TaskLaunch


@dataclass(frozen=True, slots=True)
class Flight:
    """A batch handed to the worker, and its results once `launch_many` returned."""

    launches: tuple[Launch, ...]
    future: Future[list[LaunchResult]]

    def results(self) -> list[LaunchResult]:
        """One result per launch, in order; a batch whose call raised (an engine's bug)
        is that exception for each of its launches."""
        try:
            results = self.future.result()
        except Exception as exc:
            return [exc] * len(self.launches)
        if len(results) != len(self.launches):
            error = RuntimeError(f"the engine answered {len(results)} launches for "
                                 f"{len(self.launches)}")
            return [error] * len(self.launches)
        return results


def launch_now(executor: Executor, launches: Sequence[Launch]
               ) -> list[tuple[Launch, LaunchResult]]:
    """The batch's launches with their results, launched on the calling thread (no worker:
    `step`, a start's take-over), as `LaunchFlights.done` gives a batch."""
    future: Future[list[LaunchResult]] = Future()
    try:
        future.set_result(executor.launch_many([launch.spec for launch in launches]))
    except Exception as exc:
        future.set_exception(exc)
    return list(zip(launches, Flight(tuple(launches), future).results(), strict=True))


class LaunchFlights:
    """The batches in flight, oldest first, and the worker thread that launches them.
    Used from the loop's thread only; `on_done` is called from the worker's when a batch
    has its results (the loop then takes them up on its next turn)."""

    def __init__(self, executor: Executor, on_done: Callable[[], None]) -> None:
        self._executor = executor
        self._on_done = on_done
        self._flights: deque[Flight] = deque()
        self._refs: set[TaskRef] = set()
        self._worker: ThreadPoolExecutor | None = None

    def __bool__(self) -> bool:
        return bool(self._flights)

    def __contains__(self, ref: object) -> bool:
        return ref in self._refs

    def hand_over(self, launches: Sequence[Launch]) -> None:
        """Have the worker launch these (after the batches already in flight)."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shoal-launch")
        specs = [launch.spec for launch in launches]
        future = self._worker.submit(self._executor.launch_many, specs)
        flight = Flight(tuple(launches), future)
        self._flights.append(flight)
        self._refs.update(launch.rec.ref for launch in launches)
        future.add_done_callback(lambda _: self._on_done())

    def done(self, *, wait: bool) -> Iterator[list[tuple[Launch, LaunchResult]]]:
        """Each batch whose results are in, oldest first (`wait`: every batch in flight,
        waiting for them), as its launches and their results; a batch is out of flight
        before it is given."""
        while self._flights and (wait or self._flights[0].future.done()):
            flight = self._flights.popleft()
            results = flight.results()  # waits, when `wait` says so
            self._refs.difference_update(launch.rec.ref for launch in flight.launches)
            yield list(zip(flight.launches, results, strict=True))

    def close(self) -> None:
        """Stop the worker (the batches in flight are to be taken up first)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
