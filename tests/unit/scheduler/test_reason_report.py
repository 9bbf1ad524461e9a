"""`Session.report` visits what changed: a quiet cycle over a long line of jobs that do not
fit looks at next to none of them, and jobs that join the line among those it skipped get
their reason all the same (`shoal.scheduler.reason_report`)."""

from __future__ import annotations

import report_support
from report_support import job

from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.reason_report import ReasonChanges, ReasonLedger
from shoal.scheduler.session import Hooks

PROFILE = Profile.load("default")
HOOKS = Hooks(PROFILE.plugins())
JOBS = 60


def models() -> tuple[SchedulerModel, SchedulerModel]:
    return report_support.models(JOBS)


def cycle(kept: SchedulerModel, fresh: SchedulerModel, ledger: ReasonLedger) -> ReasonChanges:
    """One cycle on each (`report_support.cycle`); the changes reported."""
    return report_support.cycle(PROFILE, HOOKS, kept, fresh, ledger)[0]


def test_a_quiet_cycle_visits_next_to_no_waiting_job() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    first = cycle(kept, fresh, ledger)
    assert len(first.waits) == JOBS - 2  # two fit the node
    for _ in range(2):  # the reasons written out once are reset and looked at once more
        cycle(kept, fresh, ledger)
    quiet = cycle(kept, fresh, ledger)
    assert quiet.waits == {} and quiet.gone == ()
    assert quiet.visited <= 2, "the line's head, tried each cycle"


def test_jobs_joining_among_the_skipped_ones_get_their_reason() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    for _ in range(4):
        cycle(kept, fresh, ledger)
    for model in (kept, fresh):  # submitted early: in the middle of the line
        model.add_jobs([job("early", 10.5), job("earlier", 20.5)])
    joined = cycle(kept, fresh, ledger)
    assert set(joined.waits) == {"early", "earlier"}
    running = next(name for name, info in kept.jobs.items() if info.running)
    for model in (kept, fresh):  # back into the line, where the last report skipped
        model.release_task(model.jobs[running].running[0].ref)
    cycle(kept, fresh, ledger)
    for model in (kept, fresh):
        model.remove_job("j030")
    gone = cycle(kept, fresh, ledger)
    assert "j030" in gone.gone


def test_a_changed_reason_is_reported_for_the_whole_line() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    for _ in range(4):
        cycle(kept, fresh, ledger)
    for model in (kept, fresh):
        model.add_jobs([job("small", -1.0, cpus=1)])  # takes one more CPU: counts move
    moved = cycle(kept, fresh, ledger)
    assert len(moved.waits) >= JOBS - 3
