"""The model's change counters (`shoal.scheduler.epochs`) move exactly when their change
happens.

Random traces replayed by the simulator under `las` with low thresholds (jobs arrive, start,
cross thresholds, are preempted and end), with node failures and repairs drawn in: after
every event, each counter has moved by exactly what the event changed, read off the model
independently of the counters — jobs that entered and left it, the tasks the cycle bound,
the tasks that stopped holding resources (per physical node), the running jobs las now
files in another class than before.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api.decisions import Decisions
from shoal.scheduler.epochs import EpochMark
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.las import LeastAttainedService
from shoal.scheduler.session import Session
from shoal.sim.engine import Event, EventKind
from shoal.sim.simulator import NodeEvent, SimConfig, Simulator

from .test_kept_indexes import LAS, TraceCluster, traces

Tasks = set[tuple[Any, str]]


def tasks_of(model: SchedulerModel) -> Tasks:
    """Every task holding resources, with the physical node it holds them on."""
    return {(t.ref, model.node(t.node).physical.name)
            for info in model.jobs.values() for t in info.running}


class Watched(Simulator):
    """Checks the counters against the model around every event."""

    events_checked = 0
    moved: ClassVar[set[str]] = set()
    opened_due = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        las = next(p for p in self._hooks.plugins if isinstance(p, LeastAttainedService))
        opened = las.open_session

        def open_session(session: Session) -> None:
            # As a session opens, every running job whose kept class ran out is read
            # afresh: `crossed` already counts what crossed by `now`.
            opened(session)
            for job in session.model.active.values():
                kept = las.classes._classes.get(job)
                if kept is not None and kept.settled and kept.holds(job):
                    assert session.now < kept.until or kept.at == session.now
                    Watched.opened_due += kept.at == session.now
        las.open_session = open_session  # type: ignore[method-assign]

    def _play(self, event: Event) -> bool:
        model = self.model
        before, names = tasks_of(model), set(model.jobs)
        mark = model.epochs.mark()
        freed = {node.name: model.epochs.freed_on(node.name) for node in self.cluster.nodes}
        las = next(p for p in self._hooks.plugins if isinstance(p, LeastAttainedService))
        cordoned = event.subject in model.cluster.cordoned
        kept = {job: c.index for job, c in las.classes._classes.items()}
        self.decided = Decisions()
        played = super()._play(event)
        after, now_names = tasks_of(model), set(model.jobs)
        bound = {(b.task, b.node) for b in self.decided.binds}
        stopped = (before | bound) - after
        epochs = model.epochs
        # A node back in service frees its capacity as a stopped task does.
        back = {event.subject} if event.kind is EventKind.NODE_UP and cordoned else set()
        assert epochs.arrived - mark.arrived == len(now_names - names)
        assert epochs.ended - mark.ended == len(names - now_names)
        assert epochs.bound - mark.bound == len(self.decided.binds)
        assert epochs.released - mark.released == len(stopped) + len(back)
        moved = {n for n, at in freed.items() if epochs.freed_on(n) != at}
        assert moved == {node for _, node in stopped} | back
        crossed = sum(1 for job, c in las.classes._classes.items()
                      if job in kept and kept[job] != c.index)
        assert epochs.crossed - mark.crossed == crossed
        assert (mark.quota_layout, mark.quota_usage) <= (model.quota.layout,
                                                         model.quota.version)
        Watched.events_checked += 1
        for kind, delta in _deltas(mark, epochs.mark()):
            if delta:
                Watched.moved.add(kind)
        return played

    def _apply(self, decisions: Decisions, now: float) -> None:
        self.decided = decisions
        super()._apply(decisions, now)


def _deltas(old: EpochMark, new: EpochMark) -> list[tuple[str, int]]:
    return [(name, getattr(new, name) - getattr(old, name)) for name in old.__slots__]


@settings(max_examples=12, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 3), failures=st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from((100.0, 900.0, 5_000.0))), max_size=2))
def test_counters_move_exactly_with_their_changes(trace: Any, nodes: int,
                                                  failures: list[tuple[int, float]]) -> None:
    node_events = tuple(e for i, at in failures if i < nodes
                        for e in (NodeEvent(at, f"n{i}", False), NodeEvent(at + 700, f"n{i}",
                                                                          True)))
    Watched.moved = set()
    Watched(trace, TraceCluster(nodes), LAS,
            SimConfig(cycle_interval=30.0, node_events=node_events)).run()
    for kind in sorted(Watched.moved):
        event(f"{kind} moved")


def test_a_node_coming_back_counts_as_capacity_freed_on_it() -> None:
    cluster = TraceCluster(2)
    model = SchedulerModel(cluster.nodes, cluster.virtual_clusters)
    model.cordon("n1")
    before = model.epochs.mark()
    model.uncordon("n1")
    assert model.epochs.released == before.released + 1
    assert model.epochs.freed_on("n1") == model.epochs.released
    assert model.epochs.freed_on("n0") == 0
    session = Session(model, LAS.plugins(), worded=False)
    assert session.model.epochs is model.epochs
