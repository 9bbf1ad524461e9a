"""Dependencies and holds (`shoal.scheduler.gates`) over random DAGs of jobs, as properties.

Jobs are submitted one at a time in name order, each depending on a random subset of the
jobs before it; each has a random outcome (it succeeds or fails once it runs) and may be
held at submission and released later, or never. A driver interleaves at random:
submitting the next job, ending a running job with its outcome, releasing a held job. Jobs
the gates open run; those they cancel end CANCELLED. Then:

1. A job runs only after every one of its dependencies has succeeded, and never while held.
2. Every job a failed or cancelled dependency reaches is cancelled (transitively), and
   nothing else is cancelled.
3. At the end each job is exactly where the oracle says: run and ended with its outcome
   when its dependencies all succeeded and it was not held for good; cancelled when one
   did not succeed; else still waiting, with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, JobState, Resources, TaskGroup
from shoal.scheduler.gates import Gate, Gates

RULES = settings(max_examples=300, deadline=None)

WAITING = "waiting"


@dataclass(frozen=True)
class Plan:
    deps: tuple[tuple[int, ...], ...]
    outcomes: tuple[JobState, ...]
    held: tuple[bool, ...]
    released: tuple[bool, ...]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(1, 9))
    deps = tuple(tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else ()))
                 for i in range(n))
    outcomes = tuple(draw(st.sampled_from([JobState.SUCCEEDED, JobState.SUCCEEDED,
                                           JobState.FAILED])) for _ in range(n))
    held = tuple(draw(st.booleans()) for _ in range(n))
    released = tuple(draw(st.booleans()) for _ in range(n))
    return Plan(deps, outcomes, held, released)


def name(i: int) -> str:
    return f"j{i}"


def expected(plan: Plan) -> dict[str, JobState | str]:
    out: dict[str, JobState | str] = {}
    for i, deps in enumerate(plan.deps):
        finals = [out[name(d)] for d in deps]
        if any(f in (JobState.FAILED, JobState.CANCELLED) for f in finals):
            out[name(i)] = JobState.CANCELLED
        elif all(f is JobState.SUCCEEDED for f in finals) and (
                not plan.held[i] or plan.released[i]):
            out[name(i)] = plan.outcomes[i]
        else:
            out[name(i)] = WAITING
    return out


@RULES
@given(plan=plans(), data=st.data())
def test_jobs_run_only_after_their_dependencies_succeed(plan: Plan, data: st.DataObject) -> None:
    n = len(plan.deps)
    gates = Gates()
    state: dict[str, JobState] = {}
    running: list[str] = []
    held: set[str] = set()
    submitted = 0
    ran: set[str] = set()

    def start(job: str) -> None:
        i = int(job[1:])
        assert job not in held, f"{job} started while held"
        for d in plan.deps[i]:
            assert state[name(d)] is JobState.SUCCEEDED, f"{job} started before {name(d)}"
        state[job] = JobState.RUNNING
        running.append(job)
        ran.add(job)

    def cancel(job: str, cause: str) -> None:
        assert state[job] is JobState.PENDING, f"{job} cancelled while {state[job]}"
        bad = [name(d) for d in plan.deps[int(job[1:])]
               if state[name(d)] in (JobState.FAILED, JobState.CANCELLED)]
        assert bad, f"{job} cancelled ({cause}) with no dependency that failed"
        state[job] = JobState.CANCELLED
        held.discard(job)

    while True:
        releasable = sorted(j for j in held if plan.released[int(j[1:])])
        moves = (["submit"] if submitted < n else []) + (["end"] if running else []) + (
            ["release"] if releasable else [])
        if not moves:
            break
        move = data.draw(st.sampled_from(moves))
        if move == "submit":
            i = submitted
            submitted += 1
            job = Job(name=name(i), groups=(TaskGroup("w", 1, Resources.of(cpu=1)),),
                      depends_on=tuple(name(d) for d in plan.deps[i]), held=plan.held[i])
            state[job.name] = JobState.PENDING
            if plan.held[i]:
                held.add(job.name)
            verdict = gates.admit(job, state.get)
            if verdict.gate is Gate.OPEN:
                start(job.name)
            elif verdict.gate is Gate.CANCEL:
                cancel(job.name, verdict.cause)
                for dependent, cause in gates.ended(job.name, JobState.CANCELLED).cancelled:
                    cancel(dependent, cause)
            else:
                assert gates.reason(job.name) is not None
        elif move == "end":
            job = running.pop(data.draw(st.integers(0, len(running) - 1)))
            state[job] = plan.outcomes[int(job[1:])]
            resolution = gates.ended(job, state[job])
            for dependent, cause in resolution.cancelled:
                cancel(dependent, cause)
            for opened in resolution.opened:
                start(opened)
        else:
            job = data.draw(st.sampled_from(releasable))
            held.discard(job)
            if gates.release(job):
                start(job)
    finals = {job: (s if s.terminal else WAITING) for job, s in state.items()}
    assert finals == expected(plan)
    for job, final in finals.items():
        assert (final == WAITING) == (job in gates)
        if final == WAITING:
            assert gates.reason(job) is not None
