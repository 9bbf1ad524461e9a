"""The dispatch policy's inputs and outputs (seed 000): the rules a multi-cluster job runs
under, what was observed of each of its copies, and the decisions the policy hands back.

Pure values: the policy (`shoal.federation.dispatch`) reads `DispatchRules` and
`CopyObservation`s and answers one `Dispatch`; the live dispatcher and the simulator's
multi-cluster what-if act on it. Times are seconds on whatever clock the driver keeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shoal.api.federation import CopyState, DispatchPolicy


@dataclass(frozen=True, slots=True)
class DispatchRules:
    """How one multi-cluster job chooses its member."""

    policy: DispatchPolicy
    guard_time_running: float = 0.0
    """Seconds a copy must stay RUNNING before it is kept (the seed's `guardTimeRunning`)."""
    time_scale: float = 0.0
    """Seconds of survival per point of priority (the seed's `timeScale`; FAC-priority)."""
    retries: int = 0
    """How many times a job whose chosen copy failed or was lost is sent to every member
    again; 0: the job fails with its copy."""

    def __post_init__(self) -> None:
        for name in ("guard_time_running", "time_scale"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: must be a finite number >= 0, not {value!r}")
        if self.retries < 0:
            raise ValueError(f"retries: must be >= 0, not {self.retries}")


@dataclass(frozen=True, slots=True)
class CopyObservation:
    """What the driver saw of one copy: its member, the dispatch round it belongs to, its
    state now, when it was first seen RUNNING and when it ended.

    Times are the driver's own (when it saw the change), so a later poll only adds to what
    an earlier one saw — which is what makes the policy's answer a function of them."""

    alias: str
    state: CopyState = CopyState.WAITING
    running_since: float | None = None
    ended_at: float | None = None
    attempt: int = 0
    """0 for the first dispatch, n for the n-th retry."""
    lost: bool = False
    """The member says the copy does not exist (any more): it counts as FAILED."""

    def __post_init__(self) -> None:
        where = f"copy on {self.alias!r}"
        if self.state.is_final != (self.ended_at is not None):
            raise ValueError(f"{where}: ended_at is set exactly when the state is final "
                             f"(state {self.state.value}, ended_at {self.ended_at})")
        if self.state is CopyState.RUNNING and self.running_since is None:
            raise ValueError(f"{where}: a RUNNING copy needs running_since")
        if self.state is CopyState.WAITING and self.running_since is not None:
            raise ValueError(f"{where}: a WAITING copy has no running_since")
        if self.lost and self.state is not CopyState.FAILED:
            raise ValueError(f"{where}: a lost copy is FAILED, not {self.state.value}")
        if (self.running_since is not None and self.ended_at is not None
                and self.ended_at < self.running_since):
            raise ValueError(f"{where}: ended_at {self.ended_at} is before running_since "
                             f"{self.running_since}")
        if self.attempt < 0:
            raise ValueError(f"{where}: attempt must be >= 0, not {self.attempt}")

    def running_at(self, t: float) -> bool:
        """Whether it was RUNNING at `t` (it ends at `ended_at`, not after)."""
        return (self.running_since is not None and self.running_since <= t
                and (self.ended_at is None or self.ended_at > t))

    def ended_by(self, t: float) -> bool:
        return self.ended_at is not None and self.ended_at <= t


@dataclass(frozen=True, slots=True)
class Submit:
    """Send a copy of the job to a member."""

    alias: str
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel a copy on its member. Repeated at every call while the copy is not final,
    so a cancel the member acknowledged late (or lost) is issued again."""

    alias: str
    attempt: int
    decided_at: float
    reason: str


@dataclass(frozen=True, slots=True)
class CopyVerdict:
    """Why a copy of the current dispatch round is kept or cancelled, for a user to read."""

    alias: str
    attempt: int
    kept: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Dispatch:
    """The policy's answer at one instant."""

    state: CopyState
    """The job's state: WAITING, RUNNING (on `on`), SUCCEEDED, FAILED or STOPPED."""
    on: str | None
    """The member whose copy leads (RUNNING) or decided the outcome (final states)."""
    winner: str | None
    """The member whose copy was chosen: it stays, every other copy is cancelled."""
    why: str
    attempt: int
    submits: tuple[Submit, ...] = ()
    cancels: tuple[Cancel, ...] = ()
    verdicts: tuple[CopyVerdict, ...] = ()
    wake_at: float | None = None
    """The next instant at which the answer changes by time alone (a guard or survival
    window ends); None: only a new observation can change it."""
