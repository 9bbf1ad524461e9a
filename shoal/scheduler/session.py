"""One cycle's session: the profile's plugins gathered per extension point, over the
scheduler model, and the decisions recorded as statements commit.

Actions read and change the session. What a committed statement did stays in the model
(a bound task holds its node); everything else here — decisions, reasons, the candidates of
this cycle — lives for one cycle only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from shoal.api.decisions import Bind, Decisions, Evict, Pending, PendingReason
from shoal.api.flavors import unflavored
from shoal.api.lifecycle import TaskState
from shoal.api.objects import TaskGroup
from shoal.api.resources import Resources
from shoal.core.nodes import FitMemo, NodePool, NodeState
from shoal.core.quota import QueueState
from shoal.core.snapshot import Snapshot
from shoal.core.statement import Allocation, Eviction, Statement
from shoal.scheduler.admissions import Admissions, Refusal, Verdict
from shoal.scheduler.flavors import choose_all
from shoal.scheduler.framework import (
    Allocatable,
    JobOrder,
    JobReady,
    JobValid,
    NodeScore,
    NodeSearchOrder,
    Plugin,
    Predicate,
    QueueOrder,
    SessionOpen,
    Starvation,
    TaskOrder,
    VictimSelection,
)
from shoal.scheduler.job_classes import Misfits
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.model import SchedulerModel, user_of
from shoal.scheduler.reason_report import NOT_REACHED, ReasonChanges, ReasonLedger, report
from shoal.scheduler.strict_line import StrictLine

MAX_HELD_BACK_NOTES = 2
"""At most this many notes (`hold_back`) are appended to one reason: a preempt and a
reclaim action may each have one."""


class Hooks:
    """The profile's plugins gathered per extension point. `isinstance` against a
    runtime-checkable protocol is slow, so a driver that runs many cycles builds this once."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = list(plugins)
        self.job_orders = [p for p in plugins if isinstance(p, JobOrder)]
        self.queue_orders = [p for p in plugins if isinstance(p, QueueOrder)]
        self.task_orders = [p for p in plugins if isinstance(p, TaskOrder)]
        self.predicates = [p for p in plugins if isinstance(p, Predicate)]
        self.node_scores = [p for p in plugins if isinstance(p, NodeScore)]
        self.search_orders = [p for p in plugins if isinstance(p, NodeSearchOrder)]
        self.job_readies = [p for p in plugins if isinstance(p, JobReady)]
        self.allocatables = [p for p in plugins if isinstance(p, Allocatable)]
        self.victim_selections = [p for p in plugins if isinstance(p, VictimSelection)]
        self.session_opens = [p for p in plugins if isinstance(p, SessionOpen)]
        self.job_valids = [p for p in plugins if isinstance(p, JobValid)]
        self.starvations: list[Starvation] = [p for p in plugins if isinstance(p, Starvation)]
        self.derived: dict[str, Any] = {}
        """What an action works out from the plugins alone, kept with them (per profile, not
        per module: drivers in other threads run other profiles)."""


class Session:
    def __init__(self, source: Snapshot | SchedulerModel, plugins: Sequence[Plugin] | Hooks,
                 candidates_to_score: int = 16, worded: bool = True) -> None:
        model = source if isinstance(source, SchedulerModel) else \
            SchedulerModel.from_snapshot(source)
        hooks = plugins if isinstance(plugins, Hooks) else Hooks(plugins)
        self.model = model
        self.now = model.now
        self.candidates_to_score = candidates_to_score
        self.hooks = hooks
        self.worded = worded
        """Whether waiting jobs' reasons are worded. A driver that takes only the decisions
        (`decide`: the simulator) may open the session unworded: the reasons the allocate
        action finds carry their kind, resource and predicate, which decisions read, but no
        message (`job_classes.UNWORDED`), and `close` and `report` refuse."""

        self.cluster = model.cluster
        self.quota = model.quota
        self.fit_memo = model.fit_memo
        self.jobs = model.jobs
        self.excluded_nodes: set[int] = set()
        """Node ordinals no placement may use, set inside `keeping_off` (backfill keeps off a
        blocked head's nodes, growth what `shoal.scheduler.growth_room` names)."""
        self.decisions = Decisions()
        self._candidates: list[JobInfo] = []
        self.admissions: Admissions | None = None
        """The enqueue action's admissions while they are taken lazily (`candidates`)."""
        self.commits = 0
        """Statements committed so far in this cycle (`shoal.scheduler.job_classes`)."""
        self.scope = 0
        """Which `keeping_off` block placements are in (0: none): each gets its own."""
        self._scopes = 0
        self.classable: dict[str, bool] = {}
        """Per virtual cluster, whether its jobs may be classed (`job_classes.job_class`)."""
        self.misfits = Misfits(self)
        """The reasons job classes were turned down with in this cycle."""
        self.joined: set[JobInfo] = set()
        """Jobs that started waiting during this cycle (evicted): not among its candidates."""
        self.regrow_at: float | None = None
        """When the elastic action may next grow a job (set by it; None: only when something
        changes): a driver that skips quiet cycles wakes up then (the simulator)."""
        self.preempted: set[str] = set()
        """Jobs that gave up tasks to others in this cycle: not grown back in it."""
        self.held_back: dict[str, list[str]] = {}
        """Per waiting job, why a preempt or reclaim action took none of the victims it
        could have (`shoal.scheduler.held_back`): appended to its reason at `close`."""
        self._blocked: dict[str, list[JobInfo]] = {}
        self._lines: list[BlockLine] = []
        """Strictly ordered queues blocked at a head whose line (the candidates behind it)
        is not written out yet (`block_lazily`)."""
        self.lazy: Callable[[], None] | None = None
        """Writes out the admissions and reasons the allocate action's class walk left
        unwritten (`shoal.scheduler.actions.class_walk`), when someone reads them."""
        self.behind_reservation: set[str] = set()
        """Jobs in `blocked` behind a starving job's reservation, not behind a strictly
        ordered queue's head (`shoal.scheduler.aging`): they may still preempt."""
        self.decisions.reservations = model.reserve()
        self.closed = model.closed_queues.of(model.quota)
        """Closed virtual clusters (theirs or an ancestor's state) → why their jobs wait:
        none of their jobs gets a bind in this cycle (`shoal.scheduler.queue_status`)."""
        self.kept_noted: frozenset[JobInfo] = frozenset()
        """Jobs noted before this cycle that do not wait (kept in the model's `noted`)."""
        self.reset_jobs: list[JobInfo] = []
        """Waiting jobs whose reason the last cycle wrote, reset as this one opened (`report`;
        one that stopped waiting since moved, and is visited for that)."""
        self._reset_reasons()
        self.touched: set[JobInfo] = set()
        """Jobs a committed statement bound or evicted tasks of, in this cycle (`report`)."""
        self.cpu_reserve_per_idle_gpu = 0
        """Millicores per idle GPU that CPU-only tasks leave free on a node (set by the
        gpu-discipline plugin when the session opens; 0: off)."""
        for plugin in hooks.session_opens:
            plugin.open_session(self)
        self.cluster.set_cpu_reserve(self.cpu_reserve_per_idle_gpu)
        choose_all(self)  # every action then sees each job on its resource flavor
        self.opened_moved = frozenset(model.waiting.moved) if worded else _NONE_MOVED
        """Jobs that moved since the class lines last read them, as the cycle opened: a
        report visits them (`shoal.scheduler.reason_report`). An unworded session makes no
        report, so it takes no copy (under backlog, a copy a cycle of a few dozen jobs)."""

    def _reset_reasons(self) -> None:
        """Every waiting job's reason starts as its blocker, or its closed queue's reason.
        Only reasons written since the last reset can differ (`SchedulerModel.noted`)."""
        model, closed = self.model, self.closed
        waiting = model.waiting
        if closed or not model.incremental:
            for job in waiting.values():
                job.reason = closed.get(job.account) or job.blocker
            model.kept_notes.start_over(waiting)
            return
        # A noted job that does not wait keeps what was written: reset when it waits again.
        self.kept_noted = model.kept_notes.reset(model.noted, waiting, self.reset_jobs)

    # ---- candidates and blocked queues -----------------------------------------------------

    def admit_lazily(self, verdict: Verdict, refusal: Refusal | None = None) -> None:
        """The enqueue action's admissions, judged as far as a reader walks them;
        `refusal`: the verdict's reason without writing it (`shoal.scheduler.strict_line`)."""
        self.admissions = Admissions(self.model.waiting, verdict, self._candidates,
                                     self.joined, refusal)

    @property
    def candidates(self) -> list[JobInfo]:
        """Jobs the enqueue action let through to allocation this cycle, in submission
        order; reading them takes every admission (and writes out blocked lines)."""
        self.settle()
        return self._candidates

    def walk_by_class(self) -> bool:
        """Whether the allocate action may take the admissions itself, class by class
        (`shoal.scheduler.actions.class_walk`): none was judged yet."""
        admissions = self.admissions
        return admissions is not None and not admissions.done and not admissions.admitted \
            and not self.closed and not self.preempted and self.model.incremental

    def take_admissions(self) -> None:
        """A class walk judges the admissions itself: none is left to drain."""
        assert self.admissions is not None
        self.admissions.done = True

    def write_admitted(self, jobs: list[JobInfo]) -> None:
        """The jobs the enqueue action let through, in submission order, from a class walk."""
        self._candidates[:] = jobs

    def next_candidate(self) -> JobInfo | None:
        """The next job the enqueue action lets through, for a reader that walks them in
        submission order; None when all are taken (`candidates` then has them all)."""
        return None if self.admissions is None else self.admissions.next()

    @property
    def blocked(self) -> dict[str, list[JobInfo]]:
        """Per virtual cluster, under strict FIFO: the waiting head job, then those behind."""
        if self.lazy is None or self._lines:
            self.settle()  # a class walk blocks no queue: what it left unwritten may wait
        return self._blocked

    def block_lazily(self, write: BlockLine) -> None:
        """A strictly ordered queue is blocked at its head: its line (who waits behind the
        head, and their reasons) is written by `write`, given every candidate, only when
        someone reads the blocked queues, the candidates or every reason (`close`); a
        report reads a `StrictLine` without writing it (`shoal.scheduler.strict_line`)."""
        self._lines.append(write)

    def unwritten_line(self) -> StrictLine | None:
        """The one strict line left unwritten, when that is all `settle` has left to do and
        a report may read it without writing it (`shoal.scheduler.strict_line`)."""
        if self.lazy is not None or len(self._lines) != 1:
            return None
        line = self._lines[0]
        return line if isinstance(line, StrictLine) and line.readable() else None

    def settle(self) -> None:
        """Take every admission left and write out the blocked lines: from here on the
        session is as if every job had been judged up front."""
        admissions = self.admissions
        if admissions is not None and not admissions.done:
            admissions.drain()
        lazy = self.lazy
        if lazy is not None:
            self.lazy = None
            lazy()
        if self._lines:
            lines, self._lines = self._lines, []
            for write in lines:
                write(self._candidates)

    # ---- extension points -----------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        orders = self.hooks.job_orders
        if len(orders) == 2:  # the common case (a policy and gang), asked per job per cycle
            first, second = orders
            return (*first.job_order_key(job), *second.job_order_key(job),
                    job.job.submitted, job.job.name)
        key: tuple[Any, ...] = ()
        for plugin in orders:
            key += plugin.job_order_key(job)
        return (*key, job.job.submitted, job.job.name)

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]:
        key: tuple[Any, ...] = ()
        for plugin in self.hooks.queue_orders:
            key += plugin.queue_order_key(queue)
        return (*key, queue.name)

    def task_order(self) -> Any:
        if not self.hooks.task_orders:
            return None
        orders = self.hooks.task_orders

        def key(group: TaskGroup, index: int) -> tuple[Any, ...]:
            out: tuple[Any, ...] = ()
            for plugin in orders:
                out += plugin.task_order_key(group, index)
            return out
        return key

    def job_valid(self, job: JobInfo) -> PendingReason | None:
        """Why the job is not acceptable under the profile's rules at all (`JobValid`)."""
        for plugin in self.hooks.job_valids:
            reason = plugin.job_valid(job)
            if reason is not None:
                return reason
        return None

    def is_gang(self, job: JobInfo) -> bool:
        """A gang job under a profile with gang semantics; otherwise tasks go one by one."""
        return job.job.gang and bool(self.hooks.job_readies)

    def min_tasks(self, job: JobInfo) -> int:
        """How many tasks must be placed together now for the job to be ready: for a gang,
        its minimum less the tasks that already count (`JobInfo.ready`: holding resources
        or ended for good, as a succeeded one); 0 for a ready gang."""
        readies = self.hooks.job_readies
        if len(readies) == 1:  # gang alone, asked per job per cycle
            return readies[0].min_tasks(job)
        return max((p.min_tasks(job) for p in readies), default=1)

    def startable(self, job: JobInfo) -> bool:
        """Whether enough of the job's tasks wait to be placed to make it ready: not so
        while some of a gang's tasks are held back because their evicted processes are
        still stopping (`SchedulerModel.hold_back`). Tasks that ended for good need no
        placing: a gang whose task is retried after a peer succeeded needs only the retry."""
        if job.pending_count() < self.min_tasks(job):
            return False
        return not self.is_gang(job) or all(
            len(job.pending.get(name, ())) >= short for name, short in job.shortfalls())

    def job_ready(self, job: JobInfo) -> bool:
        """Whether the job runs as far as placement goes: every readiness plugin agrees, and
        it has started — a task holds resources, or, for a gang, a task counts toward its
        minimum (`JobInfo.ready`: one that succeeded does). A ready gang's other pending
        tasks are surplus, placed one by one."""
        started = job.ready if self.is_gang(job) else job.holding
        return started > 0 and all(p.job_ready(job) for p in self.hooks.job_readies)

    def allocatable(self, queue: str, request: Resources, surplus: bool = False
                    ) -> PendingReason | None:
        state = self.quota.get(queue)
        for plugin in self.hooks.allocatables:
            reason = plugin.allocatable(state, request, surplus)
            if reason is not None:
                return reason
        return None

    def user_allows(self, job: JobInfo, request: Resources) -> PendingReason | None:
        """Whether the job's user may take `request` more in its virtual cluster
        (`maxPerUser`, `shoal.core.user_quota`): asked before every placement
        (`shoal.scheduler.fitting`), so allocate, backfill, preempt, reclaim and elastic
        growth all keep to it. Under a profile with a quota plugin, as `allocatable`."""
        users = self.model.users
        if not users or not self.hooks.allocatables:
            return None
        return users.check(self.model.user_path(job.queue), user_of(job), unflavored(request))

    def admissible(self, queue: str, request: Resources) -> PendingReason | None:
        state = self.quota.get(queue)
        for plugin in self.hooks.allocatables:
            reason = plugin.admissible(state, request)
            if reason is not None:
                return reason
        users = self.model.users
        if users and self.hooks.allocatables:
            # The same for every user: a request over `maxPerUser` alone never runs.
            return users.never_fits(self.model.user_path(queue), unflavored(request))
        return None

    def pool_key(self, group: TaskGroup) -> Hashable:
        predicates = self.hooks.predicates
        if len(predicates) == 1:  # the common case, asked per class and trial
            return (predicates[0].pool_key(group),)
        return tuple(p.pool_key(group) for p in predicates)

    def pool_for(self, group: TaskGroup) -> NodePool:
        predicates = self.hooks.predicates
        return self.cluster.pool(
            self.pool_key(group),
            lambda node: all(p.node_filter(group, node) is None for p in predicates))

    def filtered_out(self, group: TaskGroup) -> dict[str, int]:
        """Why nodes are not in the group's pool: reason → number of nodes (for messages)."""
        counts: dict[str, int] = {}
        for state in self.cluster.states:
            if not state.node.schedulable:
                counts["are unschedulable"] = counts.get("are unschedulable", 0) + 1
                continue
            for p in self.hooks.predicates:
                why = p.node_filter(group, state.node)
                if why is not None:
                    counts[why] = counts.get(why, 0) + 1
                    break
        return counts

    def spread(self, request: Resources) -> bool:
        orders = self.hooks.search_orders
        if len(orders) == 1:  # the placement plugin alone, asked per placement
            return bool(orders[0].spread(request))
        return any(p.spread(request) for p in orders)

    # ---- placement ------------------------------------------------------------------------

    def virtual_nodes_for(self, queue: str, group: TaskGroup) -> list[NodeState]:
        """The VC's own virtual nodes that pass the group's predicates: its fixed-size
        nodes, then the flexible parts it keeps."""
        mine = [*self.model.reservations.on(queue), *self.model.holds.on(queue)]
        return [node for node in mine
                if all(p.node_filter(group, node.node) is None for p in self.hooks.predicates)]

    def pick_virtual_node(self, queue: str, group: TaskGroup, request: Resources
                          ) -> NodeState | None:
        """The first of the VC's own virtual nodes that passes the group's predicates and
        has room (seed 003: when the first matching virtual node is full, the next one)."""
        excluded = self.excluded_nodes
        for node in self.virtual_nodes_for(queue, group):
            if node.fits(request) and node.ordinal not in excluded:
                return node
        return None

    def pick_node(self, pool: NodePool, request: Resources) -> NodeState | None:
        """The best feasible node for `request`: the first found in search order, or the
        highest-scored of the first `candidates_to_score` feasible ones."""
        scorers = self.hooks.node_scores
        best: NodeState | None = None
        best_score = 0.0
        seen = 0
        excluded = self.excluded_nodes
        for node in pool.candidates(request, self.spread(request)):
            if not node.fits(request) or (excluded and node.ordinal in excluded):
                continue
            if not scorers:
                return node
            score = 0.0
            for scorer in scorers:
                score += scorer.node_score(request, node)
            if best is None or score > best_score:
                best, best_score = node, score
            seen += 1
            if seen >= self.candidates_to_score:
                break
        return best

    def statement(self) -> Statement:
        return Statement(self.cluster, self.quota, self)

    # ---- Ledger: how committed statements become decisions -------------------------------

    def allocated(self, allocation: Allocation) -> None:
        job = self.jobs[allocation.task.job]
        job.take(allocation.task.group, allocation.task.index)
        job.hold(allocation.task.group, 1)

    def unallocated(self, allocation: Allocation) -> None:
        job = self.jobs[allocation.task.job]
        job.give_back(allocation.task.group, allocation.task.index)
        job.hold(allocation.task.group, -1)

    def evicted(self, eviction: Eviction) -> None:
        self.jobs[eviction.task.job].hold(eviction.task.group, -1)

    def unevicted(self, eviction: Eviction) -> None:
        self.jobs[eviction.task.job].hold(eviction.task.group, 1)

    def committed(self, operations: list[Allocation | Eviction]) -> None:
        self.commits += 1
        waiting = self.model.waiting
        active = self.model.active
        activate = self.model.activate
        touched = self.touched
        for op in operations:
            job = self.jobs[op.task.job]
            touched.add(job)
            if isinstance(op, Allocation):
                virtual = op.node.name if op.node.host is not None else None
                self.decisions.binds.append(Bind(op.task, op.node.physical.name, op.gpus,
                                                 unflavored(op.request), virtual))
                job.running.append(TaskInfo(op.task, op.node.name, op.gpus, TaskState.BOUND,
                                            self.now))
                activate(job)
                if not job.pending:
                    waiting.pop(job.name, None)
            else:
                self.decisions.evictions.append(Evict(op.task, op.node.physical.name,
                                                      op.reason))
                job.running = [t for t in job.running if t.ref != op.task]
                job.note_change()
                if not job.running:
                    active.pop(job.job.name, None)
                job.give_back(op.task.group, op.task.index)
                if job.pending:  # an elastic surplus task is not waited for
                    if job.name not in waiting:
                        self.joined.add(job)
                    waiting[job.name] = job

    @contextmanager
    def keeping_off(self, nodes: set[int], memo: FitMemo | None = None) -> Iterator[None]:
        """Placements inside keep off `nodes` too, with a fit memo of their own (`memo`, or a
        new one): bounds learnt with nodes excluded would be wrong without them. When `nodes`
        excludes nothing more, the session's memo stays (and `memo` is not needed)."""
        excluded, shared, scope = self.excluded_nodes, self.fit_memo, self.scope
        if not nodes - excluded:
            memo = shared
        self.excluded_nodes = excluded | nodes
        self.fit_memo = memo if memo is not None else FitMemo(self.cluster)
        self._scopes += 1
        self.scope = self._scopes
        try:
            yield
        finally:
            self.excluded_nodes, self.fit_memo, self.scope = excluded, shared, scope

    # ---- closing ---------------------------------------------------------------------------

    def decide(self) -> Decisions:
        """The decisions without the pending reasons, for a driver that does not read them
        (the simulator): judging and writing out every waiting job's reason is then left
        undone. What the cycle binds, evicts and resizes is the same as `close`'s."""
        return self.decisions

    def close(self) -> Decisions:
        """Record a reason for every job still waiting — holding nothing, or a gang holding
        fewer than its minimum — and return the decisions."""
        self._must_be_worded("close")
        self.settle()
        for job in self.waiting_jobs():
            if job.holding > 0 and self.job_ready(job):
                continue
            reason = job.reason or NOT_REACHED
            notes = self.held_back.get(job.name)
            if notes:
                reason = replace(reason, message="; ".join([reason.message, *notes]))
            self.decisions.pending.append(Pending(job.name, reason))
        return self.decisions

    def report(self, ledger: ReasonLedger) -> ReasonChanges:
        """`close`'s pending reasons as changes to `ledger`, the table of the last report
        (`shoal.scheduler.reason_report`): what it visits is what could have changed. The
        decisions (`decisions`) then carry no pending reasons."""
        self._must_be_worded("report")
        return report(self, ledger)

    def _must_be_worded(self, what: str) -> None:
        if not self.worded:
            raise RuntimeError(f"Session.{what}: the session was opened without worded "
                               "reasons (worded=False); take its decisions with decide()")

    def release(self) -> None:
        """The driver is done with the session (it took the decisions and the reasons it
        reads): drop what refers back to it — the misfits, the admissions, the class walk's
        unwritten reasons — so that it is freed as its cycle ends, not by the garbage
        collector. Each session made some fifty objects of cyclic garbage; under backlog
        collecting them cost about a twentieth of a replay. Not to be used after."""
        del self.misfits
        self.admissions = None
        self.lazy = None

    def settled_but_lazy(self) -> bool:
        """Whether `settle` has nothing left to do but the class walk's write-out."""
        admissions = self.admissions
        return (admissions is None or admissions.done) and not self._lines

    def hold_back(self, job: JobInfo, note: str) -> None:
        """Note why an action evicted nothing for the job though it could have."""
        notes = self.held_back.setdefault(job.name, [])
        if note not in notes and len(notes) < MAX_HELD_BACK_NOTES:
            notes.append(note)

    def waiting_jobs(self) -> list[JobInfo]:
        """Jobs with tasks still to place, in submission order."""
        return [j for j in self.model.waiting.in_order() if j.pending]


_NONE_MOVED: frozenset[JobInfo] = frozenset()
"""What an unworded session keeps of the jobs moved as it opened: it makes no report."""

BlockLine = Callable[[list[JobInfo]], None]
"""Writes out a blocked queue's line, given every candidate of the cycle."""

