"""One member cluster of the multi-cluster what-if, steppable: the single-cluster
`Simulator` driven from outside — advance to an instant, submit a job at an instant, cancel
a job at an instant — instead of run to completion.

It is the same simulator (the same events, the same scheduling core, the same executor
model): `MemberSimulator` only adds the three entry points around `Simulator`'s own event
handlers, so `shoal sim` and its digests are untouched. A job is known to the member from
the start (its trace holds every copy it may be sent) but arrives only when `submit` says.

A cancelled copy stops where it is: a waiting one leaves the queue, a running one frees its
GPUs at once and keeps the GPU-seconds it used (what the what-if counts as wasted).
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.api.federation import CopyState
from shoal.scheduler.profile import Profile
from shoal.sim.engine import EventKind
from shoal.sim.job_runs import JobRun
from shoal.sim.simulator import ClusterLike, SimConfig, Simulator
from shoal.sim.trace import Trace


@dataclass(frozen=True, slots=True)
class CopyOnMember:
    """What the member can tell of one copy: its state and the member's own times."""

    state: CopyState
    started: float | None
    """When it first started running on the member."""
    ended: float | None
    gpu_seconds: float
    """GPU-seconds it has held so far."""


class MemberSimulator(Simulator):
    """A `Simulator` advanced by its caller (module text)."""

    def __init__(self, trace: Trace, cluster: ClusterLike, profile: Profile,
                 config: SimConfig | None = None) -> None:
        super().__init__(trace, cluster, profile, config)
        self.now = 0.0
        self.submitted: set[str] = set()
        self.cancelled: dict[str, float] = {}
        self.changed: set[str] = set()
        """Copies that started or ended since the caller last took this set."""

    def _restart_clock(self, run: JobRun, now: float) -> None:
        if run.first_start is None:
            self.changed.add(run.spec.name)
        super()._restart_clock(run, now)

    def _complete(self, name: str, version: int, now: float) -> bool:
        done = super()._complete(name, version, now)
        if done:
            self.changed.add(name)
        return done

    def submit(self, name: str, at: float) -> None:
        """The copy `name` (a job of the member's trace) arrives at `at` (>= now)."""
        if name in self.submitted:
            raise ValueError(f"{name}: already submitted")
        if at < self.now:
            raise ValueError(f"{name}: cannot arrive at {at}, the member is at {self.now}")
        self.submitted.add(name)
        self.events.push(at, EventKind.ARRIVAL, name)

    def next_event(self) -> float | None:
        """When the member next has something to do by itself."""
        return self.events.peek_time()

    def advance(self, until: float) -> None:
        """Play every event at or before `until`, as `Simulator.run` does."""
        while self.events and (self.events.peek_time() or 0.0) <= until:
            event = self.events.pop()
            if event.kind is EventKind.ARRIVAL and event.subject in self.cancelled:
                continue  # cancelled before it arrived: it never does
            self._play(event)
        self.now = max(self.now, until)

    def cancel(self, name: str, at: float) -> None:
        """Stop the copy `name` at `at` (the member has been advanced to `at`)."""
        if name not in self.submitted or name in self.cancelled:
            return
        run = self.runs[name]
        if run.end is not None:
            return  # it finished first: nothing to stop
        self.cancelled[name] = at
        if name in self.model.jobs:  # else its arrival is still ahead: it never arrives
            self.stop_job(name, at)

    def copy(self, name: str) -> CopyOnMember:
        run = self.runs[name]
        if name in self.cancelled:
            state = CopyState.STOPPED
        elif run.end is not None:
            state = CopyState.SUCCEEDED
        elif run.first_start is not None:
            state = CopyState.RUNNING
        else:
            state = CopyState.WAITING
        end = run.end if state.is_final else None
        if end is None and name in self.cancelled:
            end = self.cancelled[name]
        used = run.gpu_seconds_used + (0.0 if end is not None else
                                       max(0.0, self.now - run.last) * run.held_gpus)
        return CopyOnMember(state, run.first_start, end, used)

    def take_changed(self) -> set[str]:
        changed, self.changed = self.changed, set()
        return changed
