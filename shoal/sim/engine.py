"""The discrete-event engine: a heap of events on a simulated clock.

Events are ordered by (time, kind, sequence). At one instant, completions come first (they
free resources), then node changes, then arrivals, and the scheduling cycle last, so a cycle
sees everything that happened at its instant; the sequence number breaks the remaining ties
in insertion order, so a run is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple


class EventKind(IntEnum):
    COMPLETION = 0
    NODE_DOWN = 1
    NODE_UP = 2
    ARRIVAL = 3
    CYCLE = 4


class Event(NamedTuple):
    """An event, ordered as a tuple: (time, kind, sequence) — the sequence is unique, so the
    fields after it are never compared. A tuple, not an ordered dataclass: the heap compares
    events hundreds of thousands of times a replay, and tuples compare without a call."""

    time: float
    kind: EventKind
    sequence: int
    subject: str = ""
    """The job or node the event is about."""
    version: int = 0
    """For completions: the job's run version when scheduled; a stale one is ignored."""


class EventQueue:
    """The events to come: a heap, and a list of events pushed all at once (`push_all`: a
    trace's arrivals), sorted once and never heaped — with 82,247 arrivals waiting in it,
    every push and pop of the few hundred other events paid for a heap that deep. `pop`
    takes the least of both heads: the same order as one heap (events never tie)."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._batch: list[Event] = []
        """Events pushed by `push_all`, sorted last first (popped from the end)."""
        self._sequence = 0
        self.processed = 0

    def push(self, time: float, kind: EventKind, subject: str = "", version: int = 0) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, Event(time, kind, self._sequence, subject, version))

    def push_all(self, events: Iterable[tuple[float, EventKind, str]]) -> None:
        """Push (time, kind, subject) events in one go, numbered in the order given, as
        `push` one by one would."""
        batch = self._batch
        for time, kind, subject in events:
            self._sequence += 1
            batch.append(Event(time, kind, self._sequence, subject))
        batch.sort(reverse=True)

    def pop(self) -> Event:
        self.processed += 1
        batch, heap = self._batch, self._heap
        if batch and (not heap or batch[-1] < heap[0]):
            return batch.pop()
        return heapq.heappop(heap)

    def peek_time(self) -> float | None:
        batch, heap = self._batch, self._heap
        if batch and (not heap or batch[-1] < heap[0]):
            return batch[-1].time
        return heap[0].time if heap else None

    def __len__(self) -> int:
        return len(self._heap) + len(self._batch)
