"""The usage report of a simulated run (`shoal sim run --usage-report FILE`): the same
report as `GET /api/v1/usage`, computed by the same code (`shoal.api.accounting`) from the
intervals in which the run's jobs held GPUs, so a what-if and production read alike.

A job's record keeps when it held how many GPUs (`JobRecord.held`), not which task did: the
attempts are rebuilt from it. A maximal run of touching intervals is one run of the job; GPUs
taken from it while it runs on (a task evicted, a shrink) end the latest-started of its
GPUs then, preempted; the run's end ends the rest — useful when the job completed then,
failed when it hit its time limit, preempted when it was evicted whole. GPUs still held
when the simulated run stops (its last sample) are useful. The simulator knows no node,
GPU type, CPU nor memory of a job's record: those are '' and 0. Times are simulated
seconds since the trace's start, shown as instants from 1970-01-01 UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shoal.api.accounting import (
    Attempt,
    GroupBy,
    Outcome,
    Step,
    UsageQuery,
    UsageReport,
    hour_of,
    usage_report,
)
from shoal.api.accounting_io import report_csv, report_to_json
from shoal.sim.result import HeldInterval, JobRecord, SimResult


def job_attempts(record: JobRecord, run_end: float) -> Iterator[Attempt]:
    """The attempts of one job's record, as the module docstring says; `run_end`: when
    the simulated run stopped (what a job still running then held is useful)."""
    user = record.user or ""
    run: list[HeldInterval] = []
    for interval in record.held:
        if run and interval.start > run[-1].end:
            yield from _run_attempts(record, user, run, run_end)
            run = []
        run.append(interval)
    if run:
        yield from _run_attempts(record, user, run, run_end)


def _run_attempts(record: JobRecord, user: str, run: list[HeldInterval], run_end: float
                  ) -> Iterator[Attempt]:
    def attempt(start: float, end: float, gpus: int, outcome: Outcome) -> Attempt:
        return Attempt(record.name, record.queue, user, "", "", outcome, start, end, gpus,
                       0, 0)

    slots: list[tuple[float, int]] = []  # (since, GPUs): a stack, latest on top
    held = 0
    for interval in run:
        if interval.gpus > held:
            slots.append((interval.start, interval.gpus - held))
        drop = held - interval.gpus
        while drop > 0:
            since, gpus = slots.pop()
            taken = min(gpus, drop)
            yield attempt(since, interval.start, taken, Outcome.PREEMPTED)
            if gpus > taken:
                slots.append((since, gpus - taken))
            drop -= taken
        held = interval.gpus
    end = run[-1].end
    if record.end is not None and end == record.end:
        outcome = Outcome.FAILED if record.timed_out else Outcome.USEFUL
    elif record.end is None and end >= run_end:
        outcome = Outcome.USEFUL  # still running when the run stopped
    else:
        outcome = Outcome.PREEMPTED
    for since, gpus in slots:
        yield attempt(since, end, gpus, outcome)


def result_attempts(result: SimResult) -> Iterator[Attempt]:
    run_end = result.samples[-1].time if result.samples else 0.0
    for record in result.jobs:
        yield from job_attempts(record, run_end)


def sim_usage_report(result: SimResult, by: GroupBy = GroupBy.QUEUE,
                     step: Step = Step.NONE) -> UsageReport:
    """The report of the whole run: from its start to the hour after its last interval."""
    attempts = list(result_attempts(result))
    last = max((a.end for a in attempts), default=0.0)
    query = UsageQuery(by, 0.0, float(hour_of(last) + 3600), step)
    return usage_report(query, attempts)


def write_usage_report(result: SimResult, path: Path, by: GroupBy = GroupBy.QUEUE,
                       step: Step = Step.NONE) -> Path:
    """Write the run's report as JSON (`GET /api/v1/usage`'s shape) or, for a `.csv` path,
    CSV (`shoal usage -o csv`'s)."""
    report = sim_usage_report(result, by, step)
    if path.suffix.lower() == ".csv":
        path.write_text(report_csv(report), encoding="utf-8")
    else:
        import json
        path.write_text(json.dumps(report_to_json(report), indent=2) + "\n", encoding="utf-8")
    return path
