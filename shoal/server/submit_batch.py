"""Submissions that arrive together are stored together: one store transaction for the new
jobs of the requests the event loop holds at once (issue 18).

The submission route runs on the event loop (`shoal.server.jobs`). In a burst several
requests are read in one turn of the loop; each is parsed and checked as before, then
waits here instead of committing alone. Two turns of the loop later (`loop.call_soon`
twice: the requests whose bytes arrived meanwhile have had their first step), their jobs
are written in one transaction (`Scheduler.submit_batch`: `executemany` inserts): one
`BEGIN IMMEDIATE` — which waits for the control loop's write — and one commit instead of
one each. With one turn, a burst's four clients, each a turn behind the other, mostly went
alone: measured in a live `shoal up`, the second turn cut the API thread's CPU per
submission to 0.77× (3 rounds of 800). A request alone is stored as before, through the
single path, two turns after it was checked (no timer: a turn with nothing else to run is
microseconds).

Nothing about a submission's answer changes: the batch is all or none, and when the store
refuses any of it (a replay, an ended job's name, two requests for one name, or any other
error) nothing of it is stored and each of its submissions goes the single path
(`submit_named`), which answers it exactly as it always did, its own error included. Only
new `shoal/v1` jobs come here; a generated name, an imported job and a document of several
jobs keep the single path.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from shoal.api import Job
from shoal.server.scheduler import Scheduler


@dataclass(frozen=True, slots=True)
class _Waiting:
    job: Job
    key: str | None
    answer: asyncio.Future[tuple[Job, bool]]


class SubmitBatches:
    """The submissions waiting for the current turn's transaction."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._waiting: list[_Waiting] = []

    async def submit(self, job: Job, key: str | None) -> tuple[Job, bool]:
        """Store the job with the others of this turn; as `Scheduler.submit`: the job as
        stored and whether it was created (False: a replay), or the store's error."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[Job, bool]] = loop.create_future()
        if not self._waiting:
            # Two turns on: a request whose bytes the loop reads while this turn's callbacks
            # run has its handler's first step in the next turn, and joins this batch there
            # (a burst's clients are each a turn apart; one turn on, most went alone).
            loop.call_soon(loop.call_soon, self._flush)
        self._waiting.append(_Waiting(job, key, answer))
        return await answer

    def _flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        try:
            stored = self._scheduler.submit_batch([(w.job, w.key) for w in waiting]) \
                if len(waiting) > 1 else None
        except Exception:  # each alone then raises its own error, or is stored
            stored = None
        if stored is not None:
            for w, job in zip(waiting, stored, strict=True):
                if not w.answer.cancelled():
                    w.answer.set_result((job, True))
            return
        for w in waiting:  # alone, or refused together: each as it always was
            try:
                done = self._scheduler.submit(w.job, w.key, wake=False)
            except Exception as exc:  # the submission's own error
                if not w.answer.cancelled():
                    w.answer.set_exception(exc)
                continue
            if not w.answer.cancelled():
                w.answer.set_result(done)
