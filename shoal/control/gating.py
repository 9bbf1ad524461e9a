"""Gates on the live control plane: dependencies (`spec.dependsOn`, Slurm's afterok), holds
(`spec.hold`, `shoal hold` / `shoal release`) and requeues (`shoal requeue`) — a base class
of `ControlPlane`, on the loop's thread.

A gated job is kept out of the scheduler's model (`shoal.scheduler.gates`, which the
simulator and the scenario runner drive too). It is gated when the loop takes it up (a
submission, or a start that rebuilds the model from the store) and opens when its last
dependency ends SUCCEEDED; a dependency that ends otherwise cancels it, and what depends on
it in turn (`_gate_ended`, called wherever a job ends: `_job_done`).

Dependencies are re-evaluated from the store at start: a dependency that no longer exists
there ended before the restart and its outcome was applied then (a failed one cancelled
this job), so it counts as met. At a submission, one that no longer exists (deleted in
between) cancels the job.

Holds, releases and requeues are asked from the API's threads and carried out on the loop's
(`_ask`): the store is written first (the hold, or the stop under way of a requeue), then the
model changes, and the API answers once both are done — so a hold never races a cycle's
binds, and each survives a crash of the server once answered. A requeue is a stop under way
(`Repository.stop_job(requeue=True)`) completed as a job retry that counts no retry: every
task starts from scratch, and the job keeps its submission time, so it is placed again in
its original order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import TypeVar

from shoal.api import Job, JobState, PendingReason
from shoal.scheduler.gates import Gate, Gates
from shoal.scheduler.model import SchedulerModel
from shoal.store import NotFoundError, Repository
from shoal.store.job_controls import ControlConflictError
from shoal.store.repository import Waiting
from shoal.store.stops import FailedTask

T = TypeVar("T")

#: How long an API thread waits for the loop to carry out a hold, release or requeue (s).
CONTROL_TIMEOUT = 30.0


class Gating:
    """`ControlPlane` supplies the store, the model, the clock and how jobs are stopped."""

    repository: Repository
    clock: Callable[[], float]
    _gates: Gates
    _gate_reasons: dict[str, PendingReason]
    _gate_lock: threading.Lock

    @property
    def model(self) -> SchedulerModel:
        raise NotImplementedError

    @property
    def looping(self) -> bool:
        raise NotImplementedError

    def _command(self, command: Callable[[], None]) -> None:
        raise NotImplementedError

    def _cancel(self, name: str, cause: str) -> None:
        raise NotImplementedError

    def _teardown(self, name: str, final: JobState, cause: str,
                  failed: FailedTask | None = None, *, requeue: bool = False,
                  hold: str | None = None) -> None:
        raise NotImplementedError

    def _forget_waiting(self, name: str) -> None:
        raise NotImplementedError

    # ---- the API's side (any thread) ----------------------------------------------------

    def hold(self, name: str, who: str) -> bool:
        """Hold a pending job (stored, then taken out of the model); whether it changed
        anything. Raises NotFoundError, ControlConflictError (it has started or ended),
        TimeoutError (the loop did not answer in time)."""
        return self._ask(lambda: self._hold(name, who))

    def release(self, name: str, who: str) -> bool:
        """Release a held job; whether it was held."""
        return self._ask(lambda: self._release(name, who))

    def requeue(self, name: str, who: str, *, hold: bool = False) -> None:
        """Stop a started job's tasks and put it back to pending (no retry counted); with
        `hold`, held as well. Raises as `hold` does (ControlConflictError: it has not
        started, or it has ended, or a stop of it is under way)."""
        self._ask(lambda: self._requeue_job(name, who, hold))

    def gate_reason(self, name: str) -> PendingReason | None:
        """Why a gated job waits (a dependency, a hold); None when it is not gated."""
        return self._gate_reasons.get(name)

    def gate_reasons(self) -> dict[str, PendingReason]:
        with self._gate_lock:
            return dict(self._gate_reasons)

    def _ask(self, question: Callable[[], T]) -> T:
        """Run `question` on the loop's thread (here when the loop does not run) and return
        its answer; its store errors are raised here."""
        if not self.looping:
            return question()
        answer: Future[T] = Future()

        def run() -> None:
            try:
                answer.set_result(question())
            except Exception as exc:
                answer.set_exception(exc)
                if not isinstance(exc, NotFoundError | ControlConflictError):
                    raise  # the loop logs it and rebuilds its model from the store
        self._command(run)
        return answer.result(timeout=CONTROL_TIMEOUT)

    # ---- the loop's side -----------------------------------------------------------------

    def _hold(self, name: str, who: str) -> bool:
        job, changed = self.repository.set_held(name, True, f"held by {who}")
        if name in self.model.jobs:  # the store found nothing of it placed
            self.model.remove_job(name)
        self._gates.hold(job)
        self._forget_waiting(name)
        self._regate([name])
        return changed

    def _release(self, name: str, who: str) -> bool:
        _, changed = self.repository.set_held(name, False, f"released by {who}")
        if self._gates.release(name):
            self._enter([name])
        self._regate([name])
        return changed

    def _requeue_job(self, name: str, who: str, hold: bool) -> None:
        self.repository.requeue_check(name)
        self._teardown(name, JobState.PENDING, f"requeued by {who}", requeue=True,
                       hold=f"held by {who} (requeue --hold)" if hold else None)

    def _gate_in(self, job: Job) -> bool:
        """Gate a just-submitted job (as stored): True if it may enter the model now; else
        it waits here, or is cancelled (its dependency ended otherwise, or is gone). A
        hold or release asked between its submission and now has been stored: it counts."""
        if job.name in self._gates:  # held before the loop took it up
            return False
        if job.held:
            now = self.repository.get_job(job.name)
            if now is None or now.state.terminal:
                return False
            job = now
        if not job.depends_on and not job.held:
            return True
        states = self.repository.job_states(job.depends_on)
        verdict = self._gates.admit(job, states.get)
        self._regate([job.name], note=True)
        if verdict.gate is Gate.CANCEL:
            self._cancel(job.name, verdict.cause)
        return verdict.gate is Gate.OPEN

    def _gate_all(self, jobs: Sequence[Job], stopping: Iterable[str]
                  ) -> tuple[list[Job], dict[str, str]]:
        """At start: the stored jobs that may enter the model, and the ones to cancel (with
        why); the others are gated. A job with a task placed, or a stop under way, has
        passed its gate already (a held one among them is gated once it is pending again)."""
        busy = set(stopping)
        gated = [j for j in jobs if (j.depends_on or j.held) and j.name not in busy
                 and not any(t.state.holds_resources for t in j.tasks)]
        if not gated:
            return list(jobs), {}
        states = self.repository.job_states(d for j in gated for d in j.depends_on)

        def state_of(name: str) -> JobState | None:
            return states.get(name, JobState.SUCCEEDED)  # gone: see the module's text

        out: list[Job] = []
        cancel: dict[str, str] = {}
        chosen = {j.name for j in gated}
        for job in jobs:
            if job.name not in chosen:
                out.append(job)
                continue
            verdict = self._gates.admit(job, state_of)
            if verdict.gate is Gate.OPEN:
                out.append(job)
            elif verdict.gate is Gate.CANCEL:
                cancel[job.name] = verdict.cause
        self._regate(chosen, note=True)
        return out, cancel

    def _gate_ended(self, name: str, state: JobState) -> None:
        """Job `name` ended: open what waited only on it, cancel what can never start."""
        resolution = self._gates.ended(name, state)
        self._regate([name, *resolution.opened, *(n for n, _ in resolution.cancelled)])
        self._enter(resolution.opened)
        for dependent, cause in resolution.cancelled:
            self._cancel(dependent, cause)

    def _gate_requeued(self, job: Job) -> bool:
        """A job back to PENDING whole (a retry, a requeue): True if it enters the model;
        a held one (`requeue --hold`) is gated instead."""
        if not job.held:
            return True
        self._gates.hold(job)
        self._regate([job.name])
        return False

    def _enter(self, names: Iterable[str]) -> None:
        """Add opened jobs to the model, as the store has them now."""
        for name in names:
            job = self.repository.get_job(name)
            if job is not None and not job.state.terminal and name not in self.model.jobs:
                self.model.add_job(job)

    def _regate(self, names: Iterable[str], *, note: bool = False) -> None:
        """Bring the reasons the API reads up to date for these jobs; `note`: record the new
        ones in the jobs' histories too."""
        noted: list[Waiting] = []
        now = self.clock()
        with self._gate_lock:
            for name in names:
                reason = self._gates.reason(name)
                if reason is None:
                    self._gate_reasons.pop(name, None)
                    continue
                self._gate_reasons[name] = reason
                if note:
                    noted.append(Waiting(name, now, f"{reason.kind.value}: {reason.message}"))
        if noted:
            self.repository.record_waiting(noted)
