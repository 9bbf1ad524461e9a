"""Job gates: which jobs the scheduler may consider at all — `spec.dependsOn` (Slurm's
`afterok`) and holds (`spec.hold`, `shoal hold`; Slurm's JobHeldUser).

A gated job is kept out of the scheduler's model entirely, so no action, order or reason of
the core has to know about gates; the drivers (the control loop, the simulator, the scenario
runner) ask `Gates` whether a job may enter, and tell it when jobs end:

- A job enters only once every job it names in `depends_on` has SUCCEEDED and it is not
  held. Until then it waits with a reason of its own (`PendingKind.DEPENDENCY`: "waiting for
  job 'a' to succeed"; `PendingKind.HELD`: "held").
- A dependency that ends otherwise (FAILED, CANCELLED) — or that the driver reports as gone
  — cancels the job (Slurm's kill_invalid_depend), and that cancel cancels the jobs that
  depend on it in turn: `ended` returns the whole closure at once, each job with its cause
  ("dependency 'a' ended Failed"), so that every driver cancels the same jobs.
- A hold keeps a job out until `release`; a held job whose dependency fails is still
  cancelled (waiting on a job that can never succeed would keep it forever).

Pure data: no clock, no I/O. A driver looks the dependencies' states up itself
(`state_of`) and decides what a dependency that does not exist means to it (the control
loop: one that was removed after it ended had its outcome applied already).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.lifecycle import JobState
from shoal.api.objects import Job

HELD = PendingReason(PendingKind.HELD, "held; `shoal release NAME` lets it be scheduled")
"""The reason of a held job (whatever else it waits for)."""


def waiting_for(unmet: Iterable[str]) -> PendingReason:
    """The reason of a job whose dependencies `unmet` (in its order) have not succeeded."""
    names = list(unmet)
    more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
    return PendingReason(PendingKind.DEPENDENCY,
                         f"waiting for job {names[0]!r} to succeed{more}",
                         field="spec.dependsOn")


def cancel_cause(dependency: str, state: JobState | None) -> str:
    """Why a job is cancelled when its dependency ended in `state` (None: it is gone)."""
    if state is None:
        return f"dependency {dependency!r} no longer exists; it can never succeed"
    return f"dependency {dependency!r} ended {state.value}"


class Gate(StrEnum):
    OPEN = "open"
    """The job may enter the scheduler's model now."""
    CLOSED = "closed"
    """It waits (for a dependency, or a release): `Gates.reason` says why."""
    CANCEL = "cancel"
    """A dependency can never succeed: cancel the job (`Verdict.cause`)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    gate: Gate
    cause: str = ""
    """Why it is cancelled (CANCEL only)."""


OPEN = Verdict(Gate.OPEN)
CLOSED = Verdict(Gate.CLOSED)


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a job's end (or a release) changed."""

    opened: tuple[str, ...] = ()
    """Jobs that may enter the model now, in the order they were gated."""
    cancelled: tuple[tuple[str, str], ...] = ()
    """Jobs to cancel, each with its cause: the job's direct dependents and, transitively,
    theirs."""


@dataclass(slots=True)
class _Gated:
    depends_on: tuple[str, ...]
    order: int
    """When it was gated: what opens or is cancelled together is listed in this order."""
    unmet: set[str] = field(default_factory=set)
    held: bool = False


class Gates:
    """The gated jobs of one driver: what each waits for, and who waits on each job."""

    def __init__(self) -> None:
        self._gated: dict[str, _Gated] = {}
        """Jobs kept out of the model, in the order they were gated."""
        self._dependents: dict[str, set[str]] = {}
        """A job name → the gated jobs that wait for it to succeed."""
        self._count = 0

    def _gate(self, job: Job, unmet: set[str], held: bool) -> _Gated:
        self._count += 1
        gated = self._gated[job.name] = _Gated(job.depends_on, self._count, unmet, held)
        return gated

    def _in_order(self, names: Iterable[str]) -> list[str]:
        gated = self._gated
        return sorted((n for n in names if n in gated), key=lambda n: gated[n].order)

    def __contains__(self, name: object) -> bool:
        return name in self._gated

    def __len__(self) -> int:
        return len(self._gated)

    def names(self) -> tuple[str, ...]:
        return tuple(self._gated)

    def admit(self, job: Job, state_of: Callable[[str], JobState | None]) -> Verdict:
        """Gate `job` (a pending job that is not in the model): OPEN, it may enter now;
        CLOSED, it waits and is kept here; CANCEL, a dependency ended otherwise than
        SUCCEEDED (or `state_of` says it does not exist: None), and the job is not kept.
        `state_of` gives the dependencies' current states."""
        self.forget(job.name)
        unmet: set[str] = set()
        for dependency in job.depends_on:
            state = state_of(dependency)
            if state is JobState.SUCCEEDED:
                continue
            if state is None or state.terminal:
                return Verdict(Gate.CANCEL, cancel_cause(dependency, state))
            unmet.add(dependency)
        if not unmet and not job.held:
            return OPEN
        self._gate(job, unmet, job.held)
        for dependency in unmet:
            self._dependents.setdefault(dependency, set()).add(job.name)
        return CLOSED

    def reason(self, name: str) -> PendingReason | None:
        """Why a gated job waits; None when it is not gated."""
        gated = self._gated.get(name)
        if gated is None:
            return None
        if gated.held:
            return HELD
        return waiting_for(d for d in gated.depends_on if d in gated.unmet)

    def reasons(self) -> dict[str, PendingReason]:
        return {name: reason for name in self._gated
                if (reason := self.reason(name)) is not None}

    def ended(self, name: str, state: JobState | None) -> Resolution:
        """Job `name` ended in `state` (None: it is gone): it is no longer gated itself,
        and what waited on it opens (SUCCEEDED: when nothing else holds it back) or is
        cancelled, with what waits on the cancelled jobs in turn."""
        self.forget(name)
        if state is JobState.SUCCEEDED:
            opened = []
            for dependent in self._in_order(self._dependents.pop(name, ())):
                gated = self._gated[dependent]
                gated.unmet.discard(name)
                if not gated.unmet and not gated.held:
                    opened.append(dependent)
            for dependent in opened:
                del self._gated[dependent]
            return Resolution(opened=tuple(opened))
        cancelled: list[tuple[str, str]] = []
        ends: list[tuple[str, JobState | None]] = [(name, state)]
        while ends:
            ended, how = ends.pop(0)
            for dependent in self._in_order(self._dependents.pop(ended, ())):
                self.forget(dependent)
                cancelled.append((dependent, cancel_cause(ended, how)))
                ends.append((dependent, JobState.CANCELLED))
        return Resolution(cancelled=tuple(cancelled))

    def hold(self, job: Job) -> None:
        """Keep `job` out of the model until `release` (it is gated, or about to leave the
        model: the driver takes it out)."""
        gated = self._gated.get(job.name)
        if gated is None:
            self._gate(job, set(), held=True)
        else:
            gated.held = True

    def release(self, name: str) -> bool:
        """Release a hold; True when the job may enter the model now (the driver adds it)."""
        gated = self._gated.get(name)
        if gated is None:
            return False
        gated.held = False
        if gated.unmet:
            return False
        del self._gated[name]
        return True

    def held(self, name: str) -> bool:
        gated = self._gated.get(name)
        return gated is not None and gated.held

    def forget(self, name: str) -> None:
        """Stop gating `name` (it ended, or was cancelled)."""
        gated = self._gated.pop(name, None)
        if gated is None:
            return
        for dependency in gated.unmet:
            waiting = self._dependents.get(dependency)
            if waiting is not None:
                waiting.discard(name)
                if not waiting:
                    del self._dependents[dependency]


@dataclass(frozen=True, slots=True)
class DependencyIssue:
    """Why `jobs[job].depends_on[index]` cannot be accepted."""

    job: int
    index: int
    message: str

    @property
    def path(self) -> str:
        return f"spec.dependsOn[{self.index}]"


def dependency_issues(jobs: Sequence[Job], stored: Mapping[str, JobState]
                      ) -> list[DependencyIssue]:
    """What is wrong with the dependencies of `jobs`, submitted together: each must name a
    job of the same submission or a stored one (`stored`: the states of those that exist),
    not the job itself, not in a cycle of the submission's jobs, and not a stored job that
    ended otherwise than SUCCEEDED (the job could never start)."""
    issues: list[DependencyIssue] = []
    together = {job.name: i for i, job in enumerate(jobs)}
    for at, job in enumerate(jobs):
        for index, dependency in enumerate(job.depends_on):
            state = stored.get(dependency)
            if dependency == job.name:
                issues.append(DependencyIssue(at, index, "a job cannot depend on itself"))
            elif dependency in together:
                continue
            elif state is None:
                issues.append(DependencyIssue(at, index, f"no job {dependency!r}"))
            elif state.terminal and state is not JobState.SUCCEEDED:
                issues.append(DependencyIssue(
                    at, index, f"job {dependency!r} ended {state.value}: this job could "
                               "never start"))
    if not issues:
        issues.extend(_cycles(jobs, together))
    return issues


def _cycles(jobs: Sequence[Job], together: Mapping[str, int]) -> list[DependencyIssue]:
    """The first dependency closing a cycle among `jobs`, if any (a depth-first walk)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> DependencyIssue | None:
        path.append(name)
        job = jobs[together[name]]
        for index, dependency in enumerate(job.depends_on):
            if dependency not in together or dependency in done:
                continue
            if dependency in path:
                loop = " -> ".join([*path[path.index(dependency):], dependency])
                return DependencyIssue(together[name], index, f"a dependency cycle: {loop}")
            found = visit(dependency)
            if found is not None:
                return found
        path.pop()
        done.add(name)
        return None

    for job in jobs:
        if job.name not in done:
            found = visit(job.name)
            if found is not None:
                return [found]
    return []
