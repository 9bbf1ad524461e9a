"""The fairshare action: seed 002's dry run over the fair-share index, as its last step of a
cycle grows the least served jobs into what is idle and shrinks the most served ones when
shares are far from even.

Units. Every live job is a unit (seed 002's `Unit`): its `MinInstances` is its gang minimum
(an elastic job's `minReplicas`), its `MaxInstances` its elastic maximum. Units are keyed by
the fairshare plugin's key — weighted running time after one more quantum at the current
size (`shoal.scheduler.plugins.fairshare`) — then the session's other job-order keys
(priority, then submission), and kept in two `FairShareIndex`es: the units that may take
more (waiting jobs the enqueue action let through, running elastic jobs below their
maximum) and the units that may give (running elastic jobs above their minimum). Both are
the seed's one tree, split so that neither end is ever searched past units that cannot act.
Without the plugin in the profile the action keys units with its default arguments.

Grow. The left-most unit that may take is taken: a waiting job is started at its initial
size — its gang minimum, through the allocate action's own `allocate_job`, so gangs start
whole, partial admission and quotas hold — and a running elastic job is grown by ONE allowed
step of its step rule (`shoal.scheduler.actions.elastic.grow_step`: all the step's tasks or
none). A unit that changed is re-keyed (removed and added under its new key) and the walk
repeats; a unit that could not change leaves the walk, since capacity only shrinks during
it. The walk ends when no unit is left, after at most one pass plus one step per placement.
A waiting job that allocate already tried in this cycle (it has a reason) is not tried
again: capacity has only shrunk since.
Because the key counts what a unit holds now (rate × quantum), a grown unit moves right at
once and the next step goes to another unit: growth is spread, not poured into one job.

Shrink. Only if the walk changed nothing and shares are far from even: the left-most unit
that could not take more is compared with the right-most unit that may give; if the giver's
key is more than `unevenRatio` times the taker's, the giver is shrunk by one allowed step
(its highest-indexed surplus tasks) and the taker tries again on what that freed. Among
givers of equal key, the one whose step loses the least work since its last checkpoint
gives first (`spec.checkpointInterval`, `shoal.scheduler.work_lost`). If one
giver's step is not enough, the next giver from the right gives one step too, while its key
is still over the bar; the evictions are committed only if the taker then starts or grows,
else undone — nothing is stopped for nothing. The first `MAX_SHRINK_TRIES` takers from the
left are tried, with at most `MAX_GIVERS` givers each, one rebalance per cycle, so each
giver loses at most one step per cycle.
A giver is never shrunk below its minimum, nor if it may not be evicted (`Job.evictable`:
`spec.preemptable: false`, or a service), nor while a task to stop is protected
(`protectFor`).

What other rules keep. Services are no units: their size is their schedule's (the services
action's), so this action neither grows one in its quiet hours (the services action would
stop those tasks again next cycle) nor gives one's tasks away; their load counts as any
running task's. Growth keeps off the nodes a blocked head could use (a starving job's
reservation, `shoal.scheduler.aging`, or a strictly ordered queue's head), as the elastic
action's does, and the jobs behind such a head are not started here, as allocate does not
start them: the head itself may still start, by rebalance too. Growth keeps off, too, the
nodes a service could use while it runs short of what its schedule needs now (`Service.need`:
its busy hours, or the hand-back before them, began and the services action could not take
everything back yet): what training grew there is what the service takes back next.
Quotas, `maxPerUser` and the CPU reserve of idle GPUs hold because every placement goes
through the same fitting (`shoal.scheduler.fitting`) as allocate's.

Freezing window (seed 002's `FreezingWindow`). A job that changed size — it started, grew or
shrank — less than its window ago (`spec.freezingWindow`, else this action's
`freezingWindow`) is neither grown nor shrunk by this action. When it last changed is what
the elastic action's scale cooldown reads too: its latest task start, or the last resize of
it in this model (`JobInfo.resized`, set by elastic, preempt and this action). The two
differ in whose they are: `scaleCooldown` (seed 001) is the job's own least time between
two resizes in every profile; the freezing window is the fair-share policy's damping of
churn, set per job or per profile. Both hold here: a job waits for the longer of the two.
Other actions (preempt, reclaim) do not read the window: it bounds fair-share moves only.

Drivers. The action sets `Session.regrow_at` (the elastic action's wake-up) to now after a
change, to when a frozen job thaws, and one quantum on while one unit waits for more and
another could give, so drivers that skip quiet cycles (the simulator) come back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from shoal.api.decisions import Resize
from shoal.core.nodes import FitMemo
from shoal.core.statement import Statement
from shoal.scheduler.actions.allocate import allocate_job, is_best_effort
from shoal.scheduler.actions.elastic import grow_step, repair_size
from shoal.scheduler.fairshare_index import FairShareIndex, Key
from shoal.scheduler.growth_room import kept_off
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.plugins.fairshare import FairShare, FairShareArguments
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.work_lost import work_lost

MAX_SHRINK_TRIES = 4
"""Takers tried per cycle for a rebalance, left-most first: bounds the trial placements a
cycle spends on takers that fit nowhere (a large gang)."""
MAX_GIVERS = 8
"""Givers that may give a step to one taker in one rebalance: a gang that needs more than
that waits for what ends, or for a profile that preempts (preempt, reclaim)."""


class FairShareActionArguments(Arguments):
    freezing_window: float = Field(
        300.0, alias="freezingWindow", ge=0, allow_inf_nan=False,
        description="seconds after a job changed size during which this action neither "
                    "grows nor shrinks it, unless the job sets spec.freezingWindow")
    uneven_ratio: float = Field(
        1.5, alias="unevenRatio", gt=1, allow_inf_nan=False,
        description="shrink the most served unit only when its key is more than this many "
                    "times the key of the unit that would take its step")


class FairShareAction:
    name = "fairshare"

    def __init__(self, arguments: FairShareActionArguments) -> None:
        self.freezing_window = arguments.freezing_window
        self.uneven_ratio = arguments.uneven_ratio

    def execute(self, session: Session) -> None:
        _Cycle(self, session).run()


def scorer(session: Session) -> FairShare:
    """The profile's fairshare plugin, or one with the default arguments."""
    for plugin in session.hooks.plugins:
        if isinstance(plugin, FairShare):
            return plugin
    plugin = FairShare(FairShareArguments())
    plugin.open_session(session)
    return plugin


def last_change(info: JobInfo) -> float | None:
    """When the job last changed size: its latest task start or its last recorded resize."""
    starts = [t.started for t in info.running if t.started is not None]
    if info.resized is not None:
        starts.append(info.resized)
    return max(starts, default=None)


class _Cycle:
    """One execution of the action over one session."""

    def __init__(self, action: FairShareAction, session: Session) -> None:
        self.action = action
        self.session = session
        self.now = session.now
        self.plugin = scorer(session)
        self.others = [p for p in session.hooks.job_orders if not isinstance(p, FairShare)]
        self.takers = FairShareIndex()
        self.givers = FairShareIndex()
        self.thaw_take: float | None = None
        self.thaw_give: float | None = None
        candidates = {j.name for j in session.candidates}
        blocked = {j.name for jobs in session.blocked.values() for j in jobs[1:]}
        self.startable = candidates - blocked
        self.reserved = kept_off(session)
        # Growth's own memo, kept over the cycle (`Session.keeping_off`): bounds learnt with
        # the reserved nodes excluded would be wrong without them.
        self.grow_memo = FitMemo(session.cluster)

    # ---- the cycle ------------------------------------------------------------------------

    def run(self) -> None:
        session = self.session
        units = [info for info in session.jobs.values() if self._live(info)]
        for info in units:
            if self._elastic_running(info):
                repair_size(session, info)
        for info in units:
            self._index(info)
        tried = self._walk()
        if tried is None:
            self._wake(self.now)
            return
        if self._rebalance(tried):
            self._wake(self.now)
            return
        wants_later = bool(tried) or self.thaw_take is not None
        gives_later = bool(self.givers) or self.thaw_give is not None
        frozen = self.thaw_take is not None or self.thaw_give is not None
        # One job that both wants and could give has no one to rebalance with.
        two = frozen or len(set(tried) | set(self.givers)) > 1
        self._wake(self.thaw_take)
        if wants_later and gives_later and two:
            self._wake(self.thaw_give)
            self._wake(self.now + max(self.plugin.quantum, 1.0))

    def _walk(self) -> list[str] | None:
        """Start or grow the left-most taker until none can; None if anything changed, else
        the takers that could not, left to right."""
        jobs = self.session.jobs
        tried: list[str] = []
        changed = False
        while self.takers:
            name = self.takers.left_most()
            assert name is not None
            info = jobs[name]
            self.takers.remove(name)
            if info.reason is not None and not info.holding:
                # Allocate tried it in this cycle and it did not fit; capacity has only
                # shrunk since, so trying again would cost a placement for nothing.
                tried.append(name)
            elif self._take(info):
                changed = True
                self.givers.discard(name)
                self._index(info)
            else:
                tried.append(name)
        return None if changed else tried

    def _rebalance(self, tried: list[str]) -> bool:
        """Shrink the right-most givers one step each for the left-most taker that can use
        it, if shares are far from even (module docstring); True if it did."""
        session = self.session
        for name in tried[:MAX_SHRINK_TRIES]:
            taker = session.jobs[name]
            # A trial on evictions that are then undone says nothing true about why the
            # taker waits: its reason stays allocate's (a starving head's names its
            # reservation).
            waits = taker.reason
            taker_key = self.plugin.key(taker, self.now)
            bar = self.action.uneven_ratio * taker_key
            statement = session.statement()
            shrunk: list[tuple[JobInfo, int, int, str]] = []
            for giver_name in self.givers.reversed():
                if len(shrunk) >= MAX_GIVERS:
                    break
                giver = session.jobs[giver_name]
                giver_key = self.plugin.key(giver, self.now)
                if giver_key <= bar:
                    break  # every giver further left is even closer to the taker
                if giver_name == name:
                    continue
                size, down, why = self._shrink(statement, giver, taker, giver_key, taker_key)
                shrunk.append((giver, size, down, why))
                if self._take(taker):
                    statement.commit()
                    for job, _, to, reason in shrunk:
                        self._resized(job, to, reason)
                    return True
            statement.discard()
            taker.reason = waits
        return False

    # ---- units ----------------------------------------------------------------------------

    def _live(self, info: JobInfo) -> bool:
        session = self.session
        return not info.stopping and not info.finishing \
            and info.account not in session.closed and info.name not in session.preempted

    def _elastic_running(self, info: JobInfo) -> bool:
        """Elastic, its guaranteed part placed, its elastic group not best-effort (those
        are backfill's: `shoal.scheduler.actions.elastic`)."""
        elastic = info.job.elastic
        return elastic is not None and info.job.service is None and not info.pending \
            and bool(info.running) and not is_best_effort(info.job.group(elastic.group))

    def _index(self, info: JobInfo) -> None:
        """Put the unit in the indexes it belongs to now, under its current key."""
        if info.name in self.startable and info.pending and not self.session.job_ready(info):
            self.takers.add(info.name, self._key(info))
            return
        if not self._elastic_running(info):
            return
        elastic = info.job.elastic
        assert elastic is not None
        size = info.elastic_size()
        if not elastic.allows(size):
            return  # repair could not bring it to an allowed size: left as it is
        thaw = self._thaw(info)
        frozen = thaw is not None and thaw > self.now
        if info.surplus and elastic.grown(size) is not None:
            if frozen:
                self.thaw_take = _earliest(self.thaw_take, thaw)
            else:
                self.takers.add(info.name, self._key(info))
        if elastic.shrunk(size) is not None and info.job.evictable:
            free = self._unprotected_at(self._step_down(info))
            at = max(thaw or self.now, free)
            if at > self.now:
                self.thaw_give = _earliest(self.thaw_give, at)
            else:
                self.givers.add(info.name, self._giver_key(info))

    def _key(self, info: JobInfo) -> Key:
        tail: tuple[Any, ...] = ()
        for plugin in self.others:
            tail += plugin.job_order_key(info)
        return (self.plugin.key(info, self.now), *tail, info.job.submitted, info.name)

    def _giver_key(self, info: JobInfo) -> Key:
        """The unit's key with, right after its fair-share key, the work its step down
        would lose (negated): among givers of equal fair-share key, the right-most — the
        first to give — loses the least since its last checkpoint (`checkpointInterval`,
        `shoal.scheduler.work_lost`), as preempt's victims are ranked."""
        key = self._key(info)
        lost = work_lost(info, self._step_down(info), self.now)
        return (key[0], -lost.gpu_seconds, -lost.cpu_seconds, *key[1:])

    def _thaw(self, info: JobInfo) -> float | None:
        """When the job's freezing window (and scale cooldown) since its last change ends."""
        last = last_change(info)
        if last is None:
            return None
        window = info.job.freezing_window
        hold = self.action.freezing_window if window is None else window
        elastic = info.job.elastic
        if elastic is not None:
            hold = max(hold, elastic.scale_cooldown)
        return last + hold

    # ---- changes --------------------------------------------------------------------------

    def _take(self, info: JobInfo) -> bool:
        """Start the waiting job at its initial size, or grow the running one one step."""
        session = self.session
        if info.pending or not session.job_ready(info):
            return allocate_job(session, session.fit_memo, info)
        why = "grown from {size} to {target}: the least served job that could grow (fair share)"
        with session.keeping_off(self.reserved, self.grow_memo):
            return grow_step(session, info, why) is not None

    def _step_down(self, info: JobInfo) -> list[TaskInfo]:
        """The tasks one step down stops: the highest-indexed surplus tasks."""
        elastic = info.job.elastic
        assert elastic is not None
        size = info.elastic_size()
        down = elastic.shrunk(size)
        assert down is not None
        surplus = sorted((t for t in info.running if info.is_surplus(t.ref.group, t.ref.index)),
                         key=lambda t: t.ref.index, reverse=True)
        return surplus[:size - down]

    def _unprotected_at(self, tasks: Iterable[TaskInfo]) -> float:
        """When none of `tasks` is protected any more (`protectFor`)."""
        out = self.now
        for task in tasks:
            if task.started is None:
                continue
            jobs = self.session.jobs
            protect = jobs[task.ref.job].job.protect_for
            if protect > 0:
                out = max(out, task.started + protect)
        return out

    def _shrink(self, statement: Statement, giver: JobInfo, taker: JobInfo, giver_key: float,
                taker_key: float) -> tuple[int, int, str]:
        elastic = giver.job.elastic
        assert elastic is not None
        size = giver.elastic_size()
        down = elastic.shrunk(size)
        assert down is not None
        why = (f"shrunk from {size} to {down} for job {taker.name!r} (fair share): its "
               f"fair-share key {giver_key:.4g} is over {self.action.uneven_ratio:g}× that "
               f"job's {taker_key:.4g}")
        group = giver.job.group(elastic.group)
        for task in self._step_down(giver):
            statement.evict(task.ref, giver.account, self.session.cluster.by_name[task.node],
                            group.resources, task.gpus, why)
        return size, down, why

    def _resized(self, info: JobInfo, size: int, why: str) -> None:
        elastic = info.job.elastic
        assert elastic is not None
        info.resized = self.now
        self.session.preempted.add(info.name)
        self.session.decisions.resizes.append(Resize(info.name, elastic.group, size, why))

    def _wake(self, at: float | None) -> None:
        if at is None:
            return
        current = self.session.regrow_at
        self.session.regrow_at = at if current is None else min(current, at)


def _earliest(current: float | None, at: float | None) -> float | None:
    if at is None:
        return current
    return at if current is None else min(current, at)
