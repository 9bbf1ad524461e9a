"""Under strict FIFO, `Session.report` reads the line behind the blocked head as one span: a
quiet cycle visits next to none of it and judges none of it, and arrivals, leavers and a
new head are reported all the same (`shoal.scheduler.strict_line`)."""

from __future__ import annotations

import report_support
from report_support import job

from shoal.api import Job, PendingKind
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.reason_report import ReasonChanges, ReasonLedger
from shoal.scheduler.session import Hooks, Session

PROFILE = Profile.load("fifo")
HOOKS = Hooks(PROFILE.plugins())
JOBS = 300


def models() -> tuple[SchedulerModel, SchedulerModel]:
    return report_support.models(JOBS)


def cycle(kept: SchedulerModel, fresh: SchedulerModel, ledger: ReasonLedger
          ) -> tuple[ReasonChanges, Session]:
    """One cycle on each (`report_support.cycle`); the changes, and the reporting session."""
    return report_support.cycle(PROFILE, HOOKS, kept, fresh, ledger)


def both(kept: SchedulerModel, fresh: SchedulerModel, jobs: list[Job]) -> None:
    for model in (kept, fresh):
        model.add_jobs(jobs)


def test_a_quiet_fifo_cycle_visits_and_judges_next_to_none_of_the_line() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    first, _ = cycle(kept, fresh, ledger)
    # Two fit the node; j002 heads the line, and the ledger keeps the rest as one line.
    assert first.line is not None and len(first.line.joined) == JOBS - 3
    assert set(first.waits) == {"j002"}
    assert ledger.get("j299").kind is PendingKind.BLOCKED
    for step in range(3):
        quiet, session = cycle(kept, fresh, ledger)
        assert quiet.waits == {} and quiet.gone == ()
        # The reasons written in the first cycle are reset and looked at once more.
        assert quiet.visited <= (3 if step == 0 else 1), "the head, tried each cycle"
        admissions = session.admissions
        assert admissions is not None and not admissions.done, "the line was not judged"
        assert len(session.model.noted) <= 2, "no reason written behind the head"


def test_arrivals_and_leavers_in_a_skipped_line_are_reported() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    for _ in range(2):
        cycle(kept, fresh, ledger)
    # Submitted early (the middle of the line), late (its end), and one no node holds.
    both(kept, fresh, [job("early", 10.5), job("late", 1_000.0), job("huge", 20.5, cpus=9)])
    for model in (kept, fresh):
        model.remove_job("j150")
    joined, _ = cycle(kept, fresh, ledger)
    assert set(joined.waits) == {"huge"}
    assert joined.line is not None and set(joined.line.joined) == {"early", "late"}
    assert ledger.get("early") == ledger.get("j299")
    assert joined.waits["huge"].kind is PendingKind.UNSCHEDULABLE
    assert joined.gone == ("j150",)
    assert joined.visited <= 6


def test_a_new_head_is_one_new_reason_for_the_line() -> None:
    kept, fresh = models()
    ledger = ReasonLedger()
    for _ in range(2):
        cycle(kept, fresh, ledger)
    for model in (kept, fresh):  # j000 ends: the head j002 binds, j003 heads the line
        model.remove_job("j000")
    moved, _ = cycle(kept, fresh, ledger)
    assert "j002" in moved.gone
    # The new head leaves the line with its own reason; the jobs behind it are not
    # listed again: the line's reason now names j003 (`shoal.scheduler.strict_line`).
    assert set(moved.waits) == {"j003"} and moved.line is not None
    assert moved.line.joined == () and not moved.line.whole
    assert moved.visited <= 4
    assert "'j003'" in str(ledger.get("j299"))
    quiet, _ = cycle(kept, fresh, ledger)
    assert quiet.waits == {} and quiet.visited <= 3
