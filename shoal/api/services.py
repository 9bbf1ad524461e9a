"""Online services (seed 002): long-running jobs that are never interrupted, and the
time-of-day profile of what they need.

A service (`kind: Service`, or a job with `spec.service`) runs until it is cancelled, gets
the `production` priority class unless it names one, and is never preempted, reclaimed nor
shrunk for other jobs (`Job.evictable`). It may declare *quiet windows*: hours of the day in
which it needs only some of its task group's replicas (`QuietWindow.replicas`); outside
them it needs all of them. Training jobs may use the difference during a quiet window.

Times are seconds of the day on the scheduler's clock, taken as UTC: the scheduler's `now`
modulo 86,400 (live, `time.time()`; in the simulator, the simulated clock, whose 0 is
midnight). A window whose end is before its start wraps midnight (22:00 → 07:00).

Hand-back: the service goes back to its full size `hand_back` seconds *before* a quiet
window ends, so that what training jobs borrowed is taken back (their elastic surplus
first, then whole jobs, lowest priority first) and the service's tasks are started, warm,
when its busy hours begin. Its *effective* quiet interval is therefore
`[start, end - hand_back)`; the boundaries of those intervals are the only instants at which
a service's need changes by itself (`Service.next_change`).

This module owns the value objects and their clock arithmetic; the scheduling rule is
`shoal.scheduler.actions.services`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DAY = 86_400.0
"""Seconds in a day: a window's instants are seconds of the day, `now % DAY`."""
DEFAULT_HAND_BACK = 900.0
"""Seconds before a busy window begins that a service takes back what it lent (15 min)."""


@dataclass(frozen=True, slots=True)
class QuietWindow:
    """Hours of the day in which a service needs only `replicas` of its task group."""

    start: float
    """Seconds of the day it begins, in [0, DAY)."""
    end: float
    """Seconds of the day it ends (exclusive), in [0, DAY), not `start`; before `start`:
    it wraps midnight."""
    replicas: int

    @property
    def length(self) -> float:
        return (self.end - self.start) % DAY

    def holds(self, second: float, hand_back: float = 0.0) -> bool:
        """Whether second-of-day `second` is within the window ended `hand_back` early."""
        return (second - self.start) % DAY < self.length - hand_back

    def overlaps(self, other: QuietWindow) -> bool:
        return self.holds(other.start) or other.holds(self.start)


@dataclass(frozen=True, slots=True)
class Service:
    """A job's service settings (`spec.service`); `Job.service` is None for training jobs."""

    group: str | None = None
    """The task group the schedule sizes; None: no schedule (or the job's only group)."""
    schedule: tuple[QuietWindow, ...] = ()
    """Quiet windows, never overlapping; none: the service always needs all its replicas."""
    hand_back: float = DEFAULT_HAND_BACK
    """Seconds before each window's end at which the service grows back (see module)."""

    def window_at(self, now: float) -> QuietWindow | None:
        """The quiet window the service is in at `now` (hand-back applied), if any."""
        second = now % DAY
        return next((w for w in self.schedule if w.holds(second, self.hand_back)), None)

    def need(self, now: float, replicas: int) -> int:
        """How many of its group's `replicas` the service needs at `now`."""
        window = self.window_at(now)
        return replicas if window is None else min(replicas, window.replicas)

    def boundaries(self) -> tuple[float, ...]:
        """Seconds of the day at which its need changes: each window's start and its
        hand-back instant (`end - hand_back`)."""
        out: set[float] = set()
        for w in self.schedule:
            out.add(w.start)
            out.add((w.end - self.hand_back) % DAY)
        return tuple(sorted(out))

    def next_change(self, now: float) -> float | None:
        """The first instant after `now` at which its need changes; None without windows."""
        marks = self.boundaries()
        if not marks:
            return None
        day = math.floor(now / DAY) * DAY
        second = now - day
        later = [m for m in marks if m > second]
        return day + later[0] if later else day + DAY + marks[0]


def time_of_day(second: float) -> str:
    """`HH:MM`, or `HH:MM:SS` when the seconds are not zero: how documents write it."""
    s = int(second % DAY)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}" + (f":{s % 60:02d}" if s % 60 else "")


def parse_time_of_day(text: str) -> float:
    """Seconds of the day from `HH:MM` or `HH:MM:SS` (24-hour, UTC); `24:00` is refused
    (say `00:00`). Raises ValueError saying what was expected."""
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(p.isdigit() and len(p) == 2 for p in parts):
        raise ValueError(f"must be a time of day as HH:MM or HH:MM:SS (UTC), got {text!r}")
    hours, minutes = int(parts[0]), int(parts[1])
    seconds = int(parts[2]) if len(parts) == 3 else 0
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValueError(f"must be a time of day between 00:00 and 23:59:59, got {text!r}")
    return float(hours * 3600 + minutes * 60 + seconds)
