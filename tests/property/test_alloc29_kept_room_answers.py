"""What the cluster's room answers a class is kept for a later cycle in the same world.

The class walk asks each class, as it begins and after a placement, what the walk would be
told on reaching it (`Misfits.answers`): a kept answer that stands, else the room's
(`allocate.room_refusals`). An answer the room gives is now kept for the class in the
world it was found in, as a trial's is (`Misfits.note`), so that a cycle woken by arrivals
alone finds it standing instead of asking the room again. Two models are driven in
lockstep — one that keeps those answers, one that asks the room every cycle
(`Misfits.keeps_room_answers` off) — with mostly arrival-only steps between cycles (so the
world often stays), and ends and stops between some; their decisions must match in every
cycle, and so must the unworded reasons read back. Each line's first job, kept by
`ClassLines.sync` for the lines it changed (`ClassLines.heads`), is checked against the
line itself after every cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from unittest import mock

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api.decisions import Decisions, PendingReason
from shoal.scheduler import Profile
from shoal.scheduler.actions import allocate
from shoal.scheduler.job_classes import Misfits
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import assert_same_cycle, one_cycle
from .test_room_refusals import SHAPES, Shape, load, step_world, twin_models

ROOM_REFUSALS = allocate.room_refusals
Reasons = dict[str, PendingReason | None]


def run(model: SchedulerModel, hooks: Hooks, profile: Profile, worded: bool, read: bool,
        keeps: bool, asked: list[int]) -> tuple[Decisions, Reasons]:
    """One cycle; `keeps`: the room's answers kept across cycles; `asked` counts the
    classes the room was asked of."""

    def counted(session: Session) -> Callable[[int], PendingReason | None] | None:
        refused = ROOM_REFUSALS(session)
        if refused is None:
            return None
        found = refused

        def answer(klass: int) -> PendingReason | None:
            asked[0] += 1
            return found(klass)
        return answer

    with mock.patch.object(allocate, "room_refusals", counted), \
            mock.patch.object(Misfits, "keeps_room_answers", keeps):
        return one_cycle(model, hooks, profile.actions(), worded, read)


def assert_heads(model: SchedulerModel) -> None:
    lines = model.class_lines
    assert lines.heads == {where: line[0][1] for where, line in lines.lines.items()}
    assert all(lines.lines.values())  # a line is dropped as its last job leaves


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 2),
       limits=st.lists(st.sampled_from([None, 4, 8]), min_size=3, max_size=3),
       jobs=st.lists(SHAPES, min_size=4, max_size=20),
       steps=st.lists(st.tuples(st.sampled_from(["unworded", "unworded", "read", "worded"]),
                                st.sampled_from(["arrive", "arrive", "arrive", "end", "stop"]),
                                st.integers(1, 2), st.lists(SHAPES, max_size=2)),
                      min_size=2, max_size=8),
       profile=st.sampled_from(["las", "sjf", "las-per-queue"]))
def test_kept_room_answers_decide_as_asking_the_room(
        nodes: int, limits: list[int | None], jobs: list[Shape],
        steps: list[tuple[str, str, int, list[Shape]]], profile: str) -> None:
    made, models = twin_models(nodes, limits, jobs)
    live, plain = models
    chosen = load(profile)
    hooks = Hooks(chosen.plugins())
    count = len(made)
    saved = 0
    for step, (mode, change, ends, arrivals) in enumerate(steps):
        worded, read = mode == "worded", mode == "read"
        live_asked, plain_asked = [0], [0]
        got, reasons = run(live, hooks, chosen, worded, read, True, live_asked)
        want, plain_reasons = run(plain, hooks, chosen, worded, read, False, plain_asked)
        assert_same_cycle(got, want, worded, step)
        assert reasons == plain_reasons, f"cycle {step}"
        assert live_asked[0] <= plain_asked[0], f"cycle {step}"
        saved += plain_asked[0] - live_asked[0]
        for model in models:
            assert_heads(model)
        count = step_world(models, live, change, ends, arrivals, count)
    event(f"room asks saved by kept answers: {'some' if saved else 'none'}")
