"""Launches in flight: batches of launches that a worker thread carries out while the
control loop (`shoal.control.loop`) goes on serving — the loop's side of
`Executor.launch_many` when it runs off the loop's thread.

Why. Starting processes is round trips to the engine (the local executor's launcher, a Ray
node's supervisor) and file-system work per task (claims, cgroups, working directories); done on
the loop's thread, a burst's next cycle, polls and recorded exits waited behind them. A
worker takes a cycle's batch instead, and the loop takes its results up on a later turn.

In chunks. A cycle's batch is handed over as chunks of at most CHUNK launches, each its
own `launch_many` call and its own results: the loop records the starts of a chunk that
is done while the worker launches the next, so a batch's first job is not recorded RUNNING
only once its last one started. The chunks that are done by the time the loop looks are
recorded together (one transaction). An event's cycle still waits until every chunk in
flight is done (`has_room`).

Lanes. An engine may launch several chunks at once (`lanes`: its `launch_lanes`, 1 where
it says nothing): the local executor's launches are mostly file-system work outside the
GIL (claims, cgroups, working directories), so a second lane keeps both cores busy where one
worker left the second idle. Chunks start in hand-over order and may end in any order; the
loop still takes them up in hand-over order only.

What stays ordered. Only the workers call `launch_many`, one chunk per call, starting them
in the order they were handed over, at most `lanes` at once, each chunk's tasks disjoint
from the others'; they touch neither the store nor the scheduler model. Everything
else — building the specs, recording the starts, stopping, evicting — stays on the loop's
thread, which takes a chunk's results up whole (`LaunchFlights.done`) in hand-over order: a
chunk that ended before one handed over ahead of it waits for that one. The loop records a
task RUNNING only from its chunk's results, so never before its launch claimed the attempt
durably. And whatever may stop, evict or fail a task whose launch is in flight first waits
for every chunk in flight and takes their results up (`Launching._settle_launches`): the
task is then tracked with its process, and the stop reaches it (or, when a failed launch of
the job taken up just then stopped the job already, finds nothing more to do). A crash while
chunks are in flight — between two of them, or with a later one launched before an earlier
one, included — leaves the tasks not yet recorded BOUND in the store, launched at restart
as before (each launch is idempotent per attempt: one already claimed is adopted, never
started twice).
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

#: At most this many launches per `launch_many` call of the worker. Smaller chunks record a
#: burst's first starts sooner; larger ones take fewer store transactions and engine
#: exchanges. At a burst's ~100-200 starts per second, 32 is about 0.2-0.3 s of launching.
CHUNK = 32


def lanes_of(executor: Executor) -> int:
    """How many chunks `executor` may launch at once: its `launch_lanes` (an engine whose
    `launch_many` is safe beside itself for other attempts says so), else 1."""
    lanes = getattr(executor, "launch_lanes", 1)
    return lanes if isinstance(lanes, int) and lanes > 1 else 1


@dataclass(frozen=True, slots=True)
class Launch:
    """One bound task handed to the engine: its record when it was judged launchable, and
    what the engine is asked to start."""

    rec: TaskRecord
    spec: TaskLaunch


@dataclass(frozen=True, slots=True)
class Flight:
    """A chunk handed to the worker, and its results once `launch_many` returned."""

    launches: tuple[Launch, ...]
    future: Future[list[LaunchResult]]

    def results(self) -> list[LaunchResult]:
        """One result per launch, in order; a chunk whose call raised (an engine's bug)
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
    """The chunks in flight, oldest first, and the worker threads that launch them (one per
    lane). Used from the loop's thread only; `on_done` is called from a worker's when a
    chunk has its results (the loop then takes them up on its next turn)."""

    def __init__(self, executor: Executor, on_done: Callable[[], None]) -> None:
        self._executor = executor
        self._on_done = on_done
        self._flights: deque[Flight] = deque()
        self._refs: set[TaskRef] = set()
        self._worker: ThreadPoolExecutor | None = None
        self.lanes = lanes_of(executor)

    def __bool__(self) -> bool:
        return bool(self._flights)

    def __contains__(self, ref: object) -> bool:
        return ref in self._refs

    def has_room(self) -> bool:
        """Whether every chunk in flight has its results (none may be taken up yet): an
        event's cycle waits for that, so a burst's arrivals share cycles and batches. A
        cycle let run while the last chunk of a batch launched was measured: on a quiet
        machine it ran 3x the cycles, each smaller, for 1.23x the daemon CPU per job, and
        slowed the API's answers by half."""
        return all(flight.future.done() for flight in self._flights)

    def hand_over(self, launches: Sequence[Launch]) -> None:
        """Have the workers launch these (after the chunks already in flight), CHUNK at a
        time, up to `lanes` chunks at once."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=self.lanes,
                                              thread_name_prefix="shoal-launch")
        # A batch of less than `lanes` full chunks is split evenly over the lanes.
        size = min(CHUNK, max(1, -(-len(launches) // self.lanes)))
        for first in range(0, len(launches), size):
            part = tuple(launches[first:first + size])
            future = self._worker.submit(self._executor.launch_many,
                                         [launch.spec for launch in part])
            self._flights.append(Flight(part, future))
            self._refs.update(launch.rec.ref for launch in part)
            future.add_done_callback(lambda _: self._on_done())

    def done(self, *, wait: bool) -> Iterator[list[tuple[Launch, LaunchResult]]]:
        """Each chunk whose results are in, oldest first, up to the first that is not
        (`wait`: every chunk in flight, waiting for them), as its launches and their
        results; a chunk is out of flight before it is given."""
        while self._flights and (wait or self._flights[0].future.done()):
            flight = self._flights.popleft()
            results = flight.results()  # waits, when `wait` says so
            self._refs.difference_update(launch.rec.ref for launch in flight.launches)
            yield list(zip(flight.launches, results, strict=True))

    def close(self) -> None:
        """Stop the workers (the chunks in flight are to be taken up first)."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
