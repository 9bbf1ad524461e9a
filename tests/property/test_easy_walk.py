"""EASY backfill walked by job class tries what the walk job by job tries (issue 18).

Under `fifo-backfill` the backfill action walks strict FIFO's line behind the blocked head
by class, with the line left unwritten (`shoal.scheduler.actions.easy_walk`); a model that
judges every job afresh (`SchedulerModel.incremental = False`) walks it job by job. Three
models of one random world on GPU nodes are driven in lockstep: one reports its reasons to
a ledger every cycle (the control loop), one takes its decisions with or without reasons
(the simulator, `shoal schedule`), and the fresh one. Running tasks and waiting jobs carry
runtime estimates or none, some jobs already run part of their tasks (the line sets them
aside), and between cycles the clock often lands exactly on a running task's expected end
or where a waiting job would end exactly at one (`now + estimate == shadow`), the edges of
EASY's test. Every cycle must bind the same tasks, and give every waiting job the same
reason, in all three.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.lifecycle import TaskState
from shoal.api.objects import Task
from shoal.api.time_limits import runtime_estimate
from shoal.scheduler import Profile
from shoal.scheduler.actions import backfill, easy_walk
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.reason_report import ReasonLedger
from shoal.scheduler.session import Hooks, Session

QUEUES = ("a", "b")
ESTIMATES = st.sampled_from([None, 30.0, 60.0, 120.0, 600.0])
Waiting = tuple[str, int, int, bool, float | None]
"""(queue, GPUs per task, tasks, gang, runtime estimate)."""

WAITING = st.tuples(st.sampled_from(QUEUES), st.sampled_from([1, 2, 4, 8]),
                    st.integers(1, 3), st.booleans(), ESTIMATES)
RUNNING = st.tuples(st.integers(0, 3), st.sampled_from([2, 4, 8]),
                    st.sampled_from([0.0, -20.0, -90.0, None]), ESTIMATES, st.booleans())
"""(node, GPUs, started (None: not known), runtime estimate, a second task of it waits)."""


def waiting_job(name: str, spec: Waiting, submitted: float) -> Job:
    queue, gpus, tasks, gang, estimate = spec
    group = TaskGroup("w", tasks, Resources.of(cpu=1_000 * gpus, memory=1_000, gpu=gpus))
    return Job(name, (group,), queue=queue, submitted=submitted, runtime_estimate=estimate,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT)


def running_jobs(specs: list[tuple[int, int, float | None, float | None, bool]], nodes: int
                 ) -> list[Job]:
    """Running jobs packed onto the nodes' GPUs; one with a waiting second task (a gang of
    minimum 1) is set aside by the line's gang order."""
    free = dict.fromkeys(range(nodes), 0)
    out = []
    for i, (drawn, gpus, started, estimate, partial) in enumerate(specs):
        node = drawn % nodes
        if free[node] + gpus > 8:
            continue
        indices = tuple(range(free[node], free[node] + gpus))
        free[node] += gpus
        group = TaskGroup("w", 2 if partial else 1,
                          Resources.of(cpu=1_000 * gpus, memory=1_000, gpu=gpus))
        task = Task(f"r{i}", "w", 0, TaskState.RUNNING, f"n{node}", indices, started)
        out.append(Job(f"r{i}", (group,), queue=QUEUES[i % 2], submitted=-100.0 + i,
                       scheduler_name=SchedulerName.SHOAL, runtime_estimate=estimate,
                       min_available=1 if partial else None, tasks=(task,)))
    return out


def edges(model: SchedulerModel, estimates: set[float]) -> list[float]:
    """Instants after now where EASY's test is on an edge: a running task's expected end,
    where a job of each estimate would end exactly then, and a second either side."""
    ends = set()
    for info in model.active.values():
        estimate = runtime_estimate(info.job)
        if estimate is None:
            continue
        for task in info.running:
            if task.started is not None:
                ends.add(task.started + estimate)
    out = {end - e + d for end in ends for e in (0.0, *estimates) for d in (-1.0, 0.0, 1.0)}
    return sorted(t for t in out if t > model.now)


class Walks:
    """Counts how the backfill action walked: by class or job by job."""

    def __init__(self) -> None:
        self.by_class = 0
        self.placed = 0
        """Tasks the walks by class bound."""

    def __enter__(self) -> Walks:
        self._walk = backfill.walk_line

        def counted(session: Session, *args: object) -> None:
            self.by_class += 1
            binds = len(session.decisions.binds)
            self._walk(session, *args)  # type: ignore[arg-type]
            self.placed += len(session.decisions.binds) - binds
        backfill.walk_line = counted  # type: ignore[assignment]
        return self

    def __exit__(self, *_: object) -> None:
        backfill.walk_line = self._walk


def cycle(model: SchedulerModel, hooks: Hooks, profile: Profile, how: str,
          ledger: ReasonLedger | None = None) -> tuple[dict[str, object], dict[str, object]]:
    """(the cycle's binds and evictions, its pending reasons by job: `close`'s, the
    ledger's after the report, or none when it only decides)."""
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    if how == "report":
        assert ledger is not None
        ledger.apply(session.report(ledger))
        decisions, reasons = session.decide(), dict(ledger.reasons())
    elif how == "close":
        decisions = session.close()
        reasons = dict(decisions.pending_by_job())
    else:
        decisions, reasons = session.decide(), {}
    moves = decisions.to_dict()
    del moves["pending"]
    return moves, reasons


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(1, 3),
       running=st.lists(RUNNING, max_size=6),
       waiting=st.lists(WAITING, min_size=1, max_size=30),
       data=st.data())
def test_easy_walk_by_class_tries_what_the_walk_job_by_job_tries(
        nodes: int, running: list[tuple[int, int, float | None, float | None, bool]],
        waiting: list[Waiting], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The jobs of a class that end in time are sorted (few) or found by reading the line
    # (many): both ways, whatever the share.
    monkeypatch.setattr(easy_walk, "SCAN_SHARE",
                        data.draw(st.sampled_from([1, 10**9]), label="scan share"))
    profile = Profile.load("fifo-backfill")
    hooks = Hooks(profile.plugins())
    node_list = [Node(f"n{i}", Resources.of(cpu=64_000, memory=64_000, gpu=8))
                 for i in range(nodes)]
    jobs = [*running_jobs(running, nodes),
            *(waiting_job(f"j{i:03d}", s, float(i)) for i, s in enumerate(waiting))]
    models = []
    for incremental in (True, True, False):
        model = SchedulerModel(node_list, [VirtualCluster(q) for q in QUEUES])
        model.incremental = incremental
        model.add_jobs(jobs)
        models.append(model)
    reporting, deciding, fresh = models
    ledger = ReasonLedger()
    estimates = {s[4] for s in waiting if s[4] is not None}
    with Walks() as walks:
        for step in range(data.draw(st.integers(2, 7), label="cycles")):
            how = data.draw(st.sampled_from(["close", "decide"]), label="reasons")
            want_moves, want = cycle(fresh, hooks, profile, "close")
            walked = walks.by_class
            got_moves, got = cycle(reporting, hooks, profile, "report", ledger)
            assert got_moves == want_moves, f"cycle {step}"
            assert got == want, f"cycle {step}"
            event("walked by class" if walks.by_class > walked else "walked job by job")
            if walks.placed:
                event("a walk by class bound a task")
            got_moves, got = cycle(deciding, hooks, profile, how)
            assert got_moves == want_moves, f"cycle {step}"
            if how == "close":
                assert got == want, f"cycle {step}"
            event(f"binds: {bool(want_moves['binds'])}")
            change = data.draw(st.sampled_from(["none", "finish", "arrive"]), label="change")
            active = sorted(fresh.active)
            if change == "finish" and active:
                name = data.draw(st.sampled_from(active), label="finished")
                for model in models:
                    model.remove_job(name)
            elif change == "arrive":
                spec = data.draw(WAITING, label="arrival")
                job = waiting_job(f"k{step}", spec, 100.0 + step)
                for model in models:
                    model.add_job(job)
            on_edge = edges(fresh, estimates)
            now = data.draw(st.sampled_from(on_edge), label="edge") \
                if on_edge and data.draw(st.booleans(), label="to an edge") \
                else fresh.now + data.draw(st.sampled_from([1.0, 45.0]), label="elapsed")
            for model in models:
                model.now = now
