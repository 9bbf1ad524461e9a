"""Two scheduler models driven in lockstep: `live`, incremental as in production, and
`fresh`, which judges every waiting job afresh each cycle (`SchedulerModel.incremental =
False`). The property tests that check what the incremental model keeps between cycles
(class walks, reason reports, kept verdicts) build the pair here and move both the same way
between cycles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, VirtualCluster
from shoal.api.decisions import Decisions, PendingReason
from shoal.scheduler import Profile
from shoal.scheduler.framework import Action
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session


@dataclass
class Twins:
    profile: Profile
    hooks: Hooks
    live: SchedulerModel
    fresh: SchedulerModel


def twins_on_small_nodes(profile: str, nodes: int, queues: Sequence[str],
                         jobs: Sequence[Job]) -> Twins:
    """The pair over `nodes` nodes of 8 CPUs and 64 GB, one virtual cluster per queue, with
    `jobs` added to both."""
    chosen = Profile.load(profile)
    node_list = [Node(f"n{i}", Resources.of(cpu=8_000, memory=64_000)) for i in range(nodes)]
    vcs = [VirtualCluster(q) for q in queues]
    live, fresh = SchedulerModel(node_list, vcs), SchedulerModel(node_list, vcs)
    fresh.incremental = False
    live.add_jobs(list(jobs))
    fresh.add_jobs(list(jobs))
    return Twins(chosen, Hooks(chosen.plugins()), live, fresh)


def one_cycle(model: SchedulerModel, hooks: Hooks, actions: Iterable[Action], worded: bool,
              read: bool) -> tuple[Decisions, dict[str, PendingReason | None]]:
    """One cycle of `actions` on `model`: closed with every reason written where `worded`;
    else its decisions and, where `read`, its waiting jobs' reasons written out and read
    back."""
    session = Session(model, hooks, worded=worded)
    for action in actions:
        action.execute(session)
    if worded:
        return session.close(), {}
    decisions = session.decide()
    if not read:
        return decisions, {}
    session.settle()
    return decisions, {j.name: j.reason for j in session.waiting_jobs()}


def moves(decisions: Decisions) -> dict[str, object]:
    """What a cycle decided, its pending reasons left out."""
    out = decisions.to_dict()
    del out["pending"]
    return out


def assert_same_cycle(got: Decisions, want: Decisions, closed: bool, step: int) -> None:
    """Both models decided the same in cycle `step`, and gave the same reasons where the
    cycle was closed (every reason written)."""
    assert moves(got) == moves(want), f"cycle {step}"
    if closed:
        assert got.to_dict()["pending"] == want.to_dict()["pending"], f"cycle {step}"


def change_both(data: st.DataObject, live: SchedulerModel, fresh: SchedulerModel,
                later: Sequence[Job], step: int) -> None:
    """Between cycles: a running job ends, or a task is evicted, or one more job of the
    same shape as one of `later` arrives, or nothing; then the clock moves on."""
    change = data.draw(st.sampled_from(["none", "finish", "evict", "arrive"]), label="change")
    running = sorted(name for name, info in live.jobs.items() if info.running)
    if change == "finish" and running:
        name = data.draw(st.sampled_from(running), label="finished")
        live.remove_job(name)
        fresh.remove_job(name)
    elif change == "evict" and running:
        name = data.draw(st.sampled_from(running), label="evicted")
        ref = live.jobs[name].running[0].ref
        live.release_task(ref)
        fresh.release_task(ref)
    elif change == "arrive" and later:
        template = data.draw(st.sampled_from(list(later)), label="template")
        job = replace(template, name=f"{template.name}-again{step}",
                      submitted=template.submitted + 0.5)
        live.add_job(job)
        fresh.add_job(job)
    live.now = fresh.now = live.now + data.draw(st.sampled_from([1.0, 60.0, 3600.0]),
                                                  label="elapsed")


def end_bound(live: SchedulerModel, fresh: SchedulerModel, bound: dict[str, None],
              ends: int) -> None:
    """The first `ends` jobs of `bound` (bound earlier, in order) end in both models."""
    for name in list(bound)[:ends]:
        live.remove_job(name)
        fresh.remove_job(name)
        del bound[name]


def evict_latest(live: SchedulerModel, fresh: SchedulerModel, bound: dict[str, None]) -> None:
    """The latest bound job that runs loses a task in both models: it goes back into its
    line, among jobs the last report skipped."""
    running = [name for name in bound if live.jobs[name].running]
    if running:
        ref = live.jobs[running[-1]].running[0].ref
        live.release_task(ref)
        fresh.release_task(ref)
