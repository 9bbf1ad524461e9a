"""Cycles decided without worded reasons decide what worded ones do (issue 18).

The simulator opens its sessions unworded (`Session(worded=False)`) and takes only their
decisions: a job class the quota tree's root turns down — the cluster as a whole short of
its request — is then refused without its trial, its reason's kind and resource set and
its message left unworded (`shoal.scheduler.actions.allocate.quota_refusal`). Two
incremental models of one random world are driven in lockstep: one opens every session
worded and closes it; the other opens some unworded (decided) and the rest worded (closed).
Every cycle must bind, evict and resize the same; where the second words its reasons they
are the first's; where it does not, every reason it left unworded has the first's kind and
resource, and `close` refuses.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions, Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.scheduler import Profile
from shoal.scheduler.job_classes import UNWORDED
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import assert_same_cycle, change_both
from .strategies import World, worlds

CHECKS = settings(max_examples=60, deadline=None)
PROFILES = ("las", "las-elastic", "default", "fifo", "sjf")


def cycle(model: SchedulerModel, hooks: Hooks, world: World, worded: bool
          ) -> tuple[Session, Decisions]:
    session = Session(model, hooks, worded=worded)
    for action in world.profile.actions():
        action.execute(session)
    return session, session.close() if worded else session.decide()


@CHECKS
@given(world=worlds(profiles=PROFILES, max_jobs=20), data=st.data())
def test_unworded_cycles_decide_as_worded_ones(world: World, data: st.DataObject) -> None:
    snapshot = world.snapshot()
    worded = SchedulerModel.from_snapshot(snapshot)
    mixed = SchedulerModel.from_snapshot(snapshot)
    hooks = Hooks(world.profile.plugins())
    later = [j for j in world.jobs if not j.tasks]
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        words = data.draw(st.booleans(), label="worded")
        _, want = cycle(worded, hooks, world, True)
        session, got = cycle(mixed, hooks, world, words)
        assert_same_cycle(got, want, words, step)
        if not words:
            reasons = {p.job: p.reason for p in want.pending}
            # A ready gang's surplus waits too, with no reason reported (`Session.close`).
            unworded = [j for j in mixed.waiting.values() if j.name in reasons
                        and j.reason is not None and j.reason.message == UNWORDED]
            for job in unworded:
                expected = reasons[job.name]
                assert (job.reason.kind, job.reason.resource) == \
                    (expected.kind, expected.resource), job.name
            event(f"{world.profile_name}: {'some' if unworded else 'no'} reason unworded")
            with pytest.raises(RuntimeError, match="without worded reasons"):
                session.close()
        change_both(data, mixed, worded, later, step)


@st.composite
def crowded(draw: st.DrawFn) -> tuple[list[Node], list[VirtualCluster], list[Job]]:
    """A few GPU nodes and more gangs of a few shapes than they hold: the cluster as a
    whole is short of most of them, cycle after cycle, as under the Philly backlog."""
    nodes = [Node(f"n{i}", Resources.of(cpu=32_000, memory=256_000, gpu=draw(
        st.sampled_from([4, 8])))) for i in range(draw(st.integers(1, 3)))]
    queues = draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2,
                           unique=True))
    vcs = [VirtualCluster(q) for q in queues]
    shapes = draw(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([1, 2, 4, 8])),
                           min_size=1, max_size=3))
    jobs = []
    for i in range(draw(st.integers(4, 14))):
        tasks, gpus = draw(st.sampled_from(shapes))
        jobs.append(Job(f"j{i:02d}", (TaskGroup("w", tasks, Resources.of(
            cpu=1_000, memory=4_000, gpu=gpus)),), queue=draw(st.sampled_from(queues)),
            scheduler_name=SchedulerName.SHOAL, submitted=float(i)))
    return nodes, vcs, jobs


@CHECKS
@given(cluster=crowded(), profile=st.sampled_from(["las", "las-elastic"]), data=st.data())
def test_unworded_refusals_under_backlog(
        cluster: tuple[list[Node], list[VirtualCluster], list[Job]], profile: str,
        data: st.DataObject) -> None:
    nodes, vcs, jobs = cluster
    chosen = Profile.load(profile)
    hooks = Hooks(chosen.plugins())
    worded, mixed = SchedulerModel(nodes, vcs), SchedulerModel(nodes, vcs)
    worded.add_jobs(jobs)
    mixed.add_jobs(jobs)
    unworded = 0
    for step in range(data.draw(st.integers(2, 8), label="cycles")):
        words = data.draw(st.booleans(), label="worded")
        want = run(worded, hooks, chosen, True)
        got = run(mixed, hooks, chosen, words)
        assert_same_cycle(got, want, words, step)
        if not words:
            reasons = {p.job: p.reason for p in want.pending}
            for job in mixed.waiting.values():
                if job.name in reasons and job.reason is not None \
                        and job.reason.message == UNWORDED:
                    unworded += 1
                    expected = reasons[job.name]
                    assert (job.reason.kind, job.reason.resource) == \
                        (expected.kind, expected.resource), job.name
        change_both(data, mixed, worded, jobs, step)
    event("some reason unworded" if unworded else "none unworded")


def run(model: SchedulerModel, hooks: Hooks, profile: Profile, worded: bool) -> Decisions:
    session = Session(model, hooks, worded=worded)
    for action in profile.actions():
        action.execute(session)
    return session.close() if worded else session.decide()
