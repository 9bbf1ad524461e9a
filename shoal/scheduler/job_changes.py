"""Which jobs changed what they run (issue 18): a log, kept by the model, of the jobs whose
running list, spec or account changed, each stamped with its latest change.

Structures kept across cycles read it instead of walking every running job each cycle to
compare what it runs with what they filed: the preempt action's running table
(`shoal.scheduler.running_table`) and las's crossing heap (`shoal.scheduler.service_classes`).
Each reader holds a cursor (the log's `stamp` when it last read) and asks for the jobs
changed since. A job's running list changes only where the model or a session appends or
removes a task, its spec where a driver or an action replaces it, its account where its own
virtual cluster is made: those places note it (`JobInfo.note_change`).

The log keeps one entry per job (its latest change), so it is bounded by the jobs that
changed; the oldest entries are forgotten past `LIMIT`, and a reader whose cursor is older
than what was forgotten (`floor`) must read every job afresh.

Pure.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.scheduler.jobs import JobInfo

LIMIT = 65_536
"""Entries kept before the oldest half is forgotten."""


class JobChanges:
    """The jobs changed, in the order of their latest change."""

    __slots__ = ("_latest", "floor", "stamp")

    def __init__(self) -> None:
        self.stamp = 0
        """The latest change's stamp: a reader's cursor after reading everything."""
        self.floor = 0
        """Changes stamped at or below this were forgotten."""
        self._latest: dict[JobInfo, int] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def note(self, job: JobInfo) -> None:
        self.stamp += 1
        latest = self._latest
        latest.pop(job, None)
        latest[job] = self.stamp
        if len(latest) > LIMIT:
            dropped = list(itertools.islice(latest.items(), LIMIT // 2))
            for old, _ in dropped:
                del latest[old]
            self.floor = dropped[-1][1]

    def since(self, cursor: int) -> list[JobInfo] | None:
        """The jobs changed after `cursor`, the latest last; None where changes after it
        were forgotten (read every job afresh)."""
        if cursor < self.floor:
            return None
        if cursor >= self.stamp:
            return []
        out: list[JobInfo] = []
        for job, stamp in reversed(self._latest.items()):
            if stamp <= cursor:
                break
            out.append(job)
        out.reverse()
        return out
