"""The quota tree of virtual clusters: guaranteed minimums, ceilings, usage and borrowing.

The root is the physical cluster: its `min` is the total allocatable capacity. Every other
virtual cluster (VC) has a `min` (guaranteed), a `max` (a ceiling on its whole subtree) and a
usage that is pushed up to every ancestor.

How much more a VC may use right now — its *headroom* — is defined top-down:

    headroom(root) = capacity − usage(root)
    headroom(c)    = min( max(c) − usage(c),
                          headroom(parent) − Σ reserved(s) over c's siblings s )
    reserved(q)    = max( min(q) − usage(q),  Σ reserved(k) over q's children k,  0 )

all per resource dimension. `reserved(q)` is the guarantee still owed to q's subtree. It is
not just q's own unused min: when one child borrows inside q's min (a child with min 0 using
what q is guaranteed), q's usage may reach its min while another child's min is still
unused — and still owed. So the owed amount is the larger of the two.

A VC may therefore always grow into its own unused `min` (its parent's headroom keeps room
for it), and above its `min` it borrows what its ancestors have idle — but never a
guarantee owed to another subtree, at any level. A job placed in a VC that has children
(seed 003: a job's own virtual cluster and its sub-clusters) is outside every child, so
`check` also keeps what the children are owed from it: headroom(q) − Σ reserved(k) over
q's children k (lent: Σ unlent(k)). That is what keeps every VC's `min`
available to it without reclaim as long as capacity does not shrink; when it does (a node
lost, a guarantee raised), reclaim takes borrowed resources back. (The first version of this
rule used `min − usage` alone; the property test
`tests/property/test_guarantees.py` found the child-borrowing counterexample.)

Lending. Asked with `lend=True`, `check` lets the request use guarantees owed to other
subtrees too (only capacity and ceilings bound it): what the capacity plugin's `reclaim` mode
allows every task, and its `elastic` mode elastic surplus only. What is lent that way is
taken back by the reclaim action when its owner needs it (`shoal.scheduler.actions.reclaim`).
A VC's `lendingLimit` bounds what is lent of it: lending subtracts each sibling's *unlent*
part instead of nothing; and its `borrowingLimit` is a second ceiling, `min +
borrowingLimit`, lent or not (`shoal.core.quota_limits`).

Why the sibling guarantees are subtracted at every level rather than once at the root:
a guarantee is a promise made by the parent to its child, so a borrower in another subtree
must see every promise on its path, and only those. This is Kueue's hierarchical cohort
rule, stated per dimension.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.defaults import DEFAULT_QUEUE
from shoal.api.objects import ROOT_QUEUE, QueueingPolicy, VirtualCluster
from shoal.api.queue_policy import QueuePreemption, QueueStatus
from shoal.api.resources import ResourceLimit, Resources, total
from shoal.core.quota_limits import borrowing_ceiling, unlendable

_UNLIMITED = ResourceLimit()
_DEFAULT_PREEMPTION = QueuePreemption()


class QueueState:
    """One VC's working state during a cycle."""

    __slots__ = ("borrow_max", "borrowing_limit", "carved", "children", "children_reserved",
                 "children_unlent", "depth", "lending_limit", "max", "min", "name", "parent",
                 "preemption", "priority", "queueing", "reserved", "spec_max", "spec_min",
                 "status", "unlent", "usage", "weight")

    def __init__(self, name: str, parent: QueueState | None, minimum: Resources,
                 maximum: ResourceLimit, weight: int, queueing: QueueingPolicy,
                 status: QueueStatus = QueueStatus.OPEN, priority: int = 0,
                 borrowing_limit: ResourceLimit = _UNLIMITED,
                 lending_limit: ResourceLimit = _UNLIMITED,
                 preemption: QueuePreemption = _DEFAULT_PREEMPTION) -> None:
        self.name = name
        self.parent = parent
        self.children: list[QueueState] = []
        self.spec_min = minimum
        self.spec_max = maximum
        self.carved = Resources()
        """Fixed-size nodes carved for this VC and its descendants: out of the quota tree's
        world, so `min` and `max` are the declared ones less this."""
        self.min = minimum
        self.max = maximum
        self.weight = weight
        self.queueing = queueing
        self.usage = Resources()
        self.children_reserved = Resources()
        """Σ reserved(child) over this VC's children."""
        self.reserved = minimum
        """Guarantee still owed to this subtree (see the module docstring)."""
        self.borrowing_limit = borrowing_limit
        self.lending_limit = lending_limit
        self.borrow_max = borrowing_ceiling(minimum, borrowing_limit)
        """`min + borrowingLimit`: a ceiling on the subtree's usage, beside `max`."""
        self.children_unlent = Resources()
        """Σ unlent(child) over this VC's children."""
        self.unlent = unlendable(minimum, lending_limit)
        """What of `reserved` is never lent, even when guarantees are
        (`shoal.core.quota_limits`)."""
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.status = status
        """Its own state; a closed ancestor closes it too (`closed_by`)."""
        self.priority = priority
        self.preemption = preemption
        """Whom its jobs may preempt and reclaim from (`shoal.scheduler.queue_preemption`)."""
        """Its place among its siblings before their share (`shoal.scheduler.queue_status`)."""

    @property
    def idle(self) -> Resources:
        """This VC's own unused min."""
        return self.min.saturating_sub(self.usage)

    def owed(self) -> Resources:
        """reserved(q) = max(min − usage, Σ reserved(children)), from the stored parts."""
        return self.idle.maximum(self.children_reserved)

    def closed_by(self) -> QueueState | None:
        """The closest virtual cluster on its path, itself included, that is closed (None:
        it is open). Closing a virtual cluster closes its whole subtree: a parent that admits
        nothing admits nothing through a child."""
        node: QueueState | None = self
        while node is not None:
            if node.status is QueueStatus.CLOSED:
                return node
            node = node.parent
        return None

    def kept(self) -> Resources:
        """unlent(q) = max(reserved − lendingLimit, Σ unlent(children)), from the stored
        parts (`reserved` already updated)."""
        if not self.lending_limit.limits:  # nothing kept back of its own
            return self.children_unlent
        return unlendable(self.reserved, self.lending_limit).maximum(self.children_unlent)

    def path(self) -> list[QueueState]:
        """Ancestors from the root down to this VC, inclusive."""
        out: list[QueueState] = []
        node: QueueState | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out


class QuotaTree:
    """All VCs of a snapshot, with their usage, for one cycle."""

    def __init__(self, virtual_clusters: Sequence[VirtualCluster], capacity: Resources) -> None:
        self.capacity = capacity
        self.root = QueueState(ROOT_QUEUE, None, capacity, ResourceLimit(), 1,
                               QueueingPolicy.PRIORITY)
        self.queues: dict[str, QueueState] = {ROOT_QUEUE: self.root}
        specs = {vc.name: vc for vc in virtual_clusters}
        specs.setdefault(DEFAULT_QUEUE, VirtualCluster(DEFAULT_QUEUE))
        for name in sorted(specs):
            self._build(name, specs, ())
        for queue in self.queues.values():
            queue.children.sort(key=lambda q: q.name)
        # Children before parents: deepest first.
        for queue in sorted(self.queues.values(), key=lambda q: -q.depth):
            queue.children_reserved = total(child.reserved for child in queue.children)
            queue.reserved = queue.owed()
            queue.children_unlent = total(child.unlent for child in queue.children)
            queue.unlent = queue.kept()
        self.version = 0
        """Moves on every charge and refund; answers cached under an older version are
        stale."""
        self._hypotheses = 0
        """The version of the latest usage taken off for a while (`refunded`)."""
        self.layout = 0
        """Moves when a virtual cluster is added, removed or carved, or the capacity
        changes: what a verdict on the idle cluster depends on."""
        self._checked: dict[tuple[str, Resources, bool],
                            tuple[int, PendingReason | None]] = {}
        self._priority_depth: tuple[int, int] | None = None
        """(layout, `priority_depth`) as last worked out."""
        self.lending = True
        """False while a job that evicted its queue-mates is placed: `check` then answers as
        if nothing were lent, whatever `lend` asks (`shoal.scheduler.queue_preemption`: a
        preemptor never borrows a guarantee its owner would reclaim at once)."""

    def _build(self, name: str, specs: dict[str, VirtualCluster], trail: tuple[str, ...]
               ) -> QueueState:
        existing = self.queues.get(name)
        if existing is not None:
            return existing
        if name in trail:
            raise ValueError(f"virtual clusters form a cycle: {' → '.join((*trail, name))}")
        spec = specs.get(name)
        if spec is None:
            raise ValueError(f"unknown virtual cluster {name!r}")
        parent = self._build(spec.parent, specs, (*trail, name)) if spec.parent != ROOT_QUEUE \
            else self.root
        queue = QueueState(name, parent, spec.guaranteed, spec.ceiling, spec.weight,
                           spec.queueing, spec.state, spec.priority, spec.borrowing_limit,
                           spec.lending_limit, spec.preemption)
        parent.children.append(queue)
        self.queues[name] = queue
        return queue

    def add(self, vc: VirtualCluster) -> QueueState:
        """Add a virtual cluster while the tree is in use (a job-scoped one, seed 003): its
        guarantee is owed from now on, on its whole path."""
        self.layout += 1
        if vc.name in self.queues:
            raise ValueError(f"virtual cluster {vc.name!r} already exists")
        parent = self.get(vc.parent)
        queue = QueueState(vc.name, parent, vc.guaranteed, vc.ceiling, vc.weight, vc.queueing,
                           vc.state, vc.priority, vc.borrowing_limit, vc.lending_limit,
                           vc.preemption)
        parent.children.append(queue)
        parent.children.sort(key=lambda q: q.name)
        self.queues[vc.name] = queue
        parent.children_reserved = parent.children_reserved + queue.reserved
        parent.children_unlent = parent.children_unlent + queue.unlent
        self.version += 1  # what is owed changed: cached answers are stale
        self._update_path(parent.name, Resources(), +1)
        return queue

    def remove(self, name: str) -> None:
        """Remove a virtual cluster that holds nothing and has no children; what it was
        owed is owed no more."""
        self.layout += 1
        queue = self.get(name)
        if queue.children or not queue.usage.is_zero() or not queue.carved.is_zero():
            raise ValueError(f"virtual cluster {name!r} still has children, usage or "
                             "carved nodes")
        parent = queue.parent
        assert parent is not None
        parent.children.remove(queue)
        parent.children_reserved = parent.children_reserved - queue.reserved
        parent.children_unlent = parent.children_unlent - queue.unlent
        del self.queues[name]
        self.version += 1  # what is owed changed: cached answers are stale
        self._update_path(parent.name, Resources(), +1)

    def set_capacity(self, capacity: Resources) -> None:
        """The physical cluster grew or shrank (a node joined, failed or was drained)."""
        self.layout += 1
        self.capacity = capacity
        self.root.min = capacity
        self.version += 1

    def carve(self, name: str, fixed: Resources, sign: int = +1) -> None:
        """The VC's fixed-size nodes were carved out of the physical nodes (`sign` -1: given
        back). From then on they are the VC's own, not the quota tree's to share: they leave
        the root's capacity, and the VC's and every ancestor's guarantee and ceiling, which
        counted them. The guarantee still owed is the same before and after."""
        self.layout += 1
        for queue in self.get(name).path()[1:]:
            queue.carved = queue.carved + fixed if sign > 0 else queue.carved - fixed
            queue.min = queue.spec_min.saturating_sub(queue.carved)
            queue.max = queue.spec_max.lowered_by(queue.carved)
            queue.borrow_max = borrowing_ceiling(queue.min, queue.borrowing_limit)
        self.set_capacity(self.capacity - fixed if sign > 0 else self.capacity + fixed)
        self._update_path(name, Resources(), +1)

    def __iter__(self) -> Iterator[QueueState]:
        return iter(self.queues.values())

    def priority_depth(self) -> int:
        """The deepest virtual cluster's depth where any has a priority, else 0. Priorities
        are fixed per virtual cluster, so it moves only with the `layout`: kept, as every
        cycle asks it (`shoal.scheduler.queue_status.QueuePriorities`)."""
        known = self._priority_depth
        if known is None or known[0] != self.layout:
            depth = max(q.depth for q in self) if any(q.priority for q in self) else 0
            known = self._priority_depth = (self.layout, depth)
        return known[1]

    def get(self, name: str) -> QueueState:
        try:
            return self.queues[name]
        except KeyError:
            raise KeyError(f"unknown virtual cluster {name!r}") from None

    # ---- usage ----------------------------------------------------------------------------

    def charge(self, name: str, request: Resources) -> None:
        """Add `request` to the VC's usage and every ancestor's."""
        self.version += 1
        self._update_path(name, request, +1)

    def refund(self, name: str, request: Resources) -> None:
        """Take `request` off the VC's usage and every ancestor's."""
        self.version += 1
        self._update_path(name, request, -1)

    @contextmanager
    def refunded(self, name: str, request: Resources) -> Iterator[None]:
        """`request` taken off the VC's usage and every ancestor's for the duration, then
        charged back: the usage is exactly what it was (integer sums), and so the answers
        `check` cached before stand again — the version is put back. Answers asked within
        are cached under a version no charge or refund ever reaches (below zero)."""
        version = self.version
        self._update_path(name, request, -1)
        self._hypotheses -= 1
        self.version = self._hypotheses
        try:
            yield
        finally:
            self._update_path(name, request, +1)
            self.version = version

    def _update_path(self, name: str, request: Resources, sign: int) -> None:
        """Change usage from the VC up to the root, keeping every reserved(q) and its
        parent's sum of them exact, and so every unlent(q) and its sum (only the path's values
        can change)."""
        queue: QueueState | None = self.get(name)
        trusted = Resources._trusted
        plain = not request.extras
        cpu, memory, gpu = request.cpu * sign, request.memory * sign, request.gpu * sign
        while queue is not None:
            usage = queue.usage
            if plain and not usage.extras:  # `+`/`-` worked out in place, as `reserved` below
                usage = trusted(usage.cpu + cpu, usage.memory + memory, usage.gpu + gpu, ())
                if sign < 0 and (usage.cpu < 0 or usage.memory < 0 or usage.gpu < 0):
                    usage = queue.usage - request  # raises, naming the dimension
            else:
                usage = usage + request if sign > 0 else usage - request
            queue.usage = usage
            old = queue.reserved
            old_unlent = queue.unlent
            least, owed = queue.min, queue.children_reserved
            if least.extras or usage.extras or owed.extras:
                reserved = queue.owed()
            else:  # `owed` worked out in place: every update of every charge comes here
                r_cpu = max(least.cpu - usage.cpu, owed.cpu, 0)
                r_memory = max(least.memory - usage.memory, owed.memory, 0)
                r_gpu = max(least.gpu - usage.gpu, owed.gpu, 0)
                # Most updates leave it as it was (usage above `min`, nothing owed below):
                # then the vector kept is the one there, and the parent's sum stands.
                reserved = old if not old.extras and r_cpu == old.cpu \
                    and r_memory == old.memory and r_gpu == old.gpu \
                    else trusted(r_cpu, r_memory, r_gpu, ())
            queue.reserved = reserved
            # `kept`, inlined for the usual virtual cluster that lends all it is owed.
            queue.unlent = unlent = queue.kept() if queue.lending_limit.limits \
                else queue.children_unlent
            parent = queue.parent
            if parent is not None:
                if reserved is not old and reserved != old:
                    parent.children_reserved = parent.children_reserved - old + reserved
                if unlent is not old_unlent and unlent != old_unlent:
                    parent.children_unlent = parent.children_unlent - old_unlent + unlent
            queue = parent

    # ---- headroom -------------------------------------------------------------------------

    def headroom(self, name: str, lend: bool = False) -> Resources:
        """How much more the VC's subtree may use now (see the module docstring); with
        `lend`, using others' guarantees where their lending limits allow."""
        room = Resources()
        for queue in self.get(name).path():
            room = self._step(queue, room, lend)
        return room

    def _step(self, queue: QueueState, parent_room: Resources, lend: bool = False
              ) -> Resources:
        if queue.parent is None:
            return self.capacity.saturating_sub(queue.usage)
        # Lending gives away what siblings are owed, but never what their lending limits
        # keep back.
        siblings_kept = queue.parent.children_unlent - queue.unlent if lend else \
            queue.parent.children_reserved - queue.reserved
        room = parent_room.saturating_sub(siblings_kept)
        if not queue.borrow_max.is_unlimited():
            room = _cap(room, queue.borrow_max, queue.usage)
        return room if queue.max.is_unlimited() else _cap(room, queue.max, queue.usage)

    def check(self, name: str, request: Resources, lend: bool = False) -> PendingReason | None:
        """None if the VC may take `request` now; otherwise the first limit, from the root
        down, that stands in the way. Answers are cached until usage next changes: a full
        cluster turns down many jobs of the same shape between two allocations."""
        lend = lend and self.lending
        key = (name, request, lend)
        cached = self._checked.get(key)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        reason = self._check(name, request, lend)
        self._checked[key] = (self.version, reason)
        return reason

    def _check(self, name: str, request: Resources, lend: bool) -> PendingReason | None:
        room = Resources()
        for queue in self.get(name).path():
            if queue.parent is None:
                room = self.capacity.saturating_sub(queue.usage)
                short = None if request.fits(room) else request.shortfall(room)
                if short:
                    return PendingReason(
                        PendingKind.INSUFFICIENT_RESOURCES,
                        f"the cluster has {room.get(short[0])} {short[0]} free, "
                        f"{request.get(short[0])} needed", resource=short[0])
                continue
            over = queue.max.exceeded_by(queue.usage, request)
            if over:
                dim = over[0]
                return PendingReason(
                    PendingKind.QUEUE_LIMIT,
                    f"virtual cluster {queue.name!r} would exceed its max {dim}="
                    f"{queue.max.get(dim)} (uses {queue.usage.get(dim)}, "
                    f"{request.get(dim)} more needed)", resource=dim, queue=queue.name)
            over = queue.borrow_max.exceeded_by(queue.usage, request)
            if over:
                return borrowing_refused(queue, request, over[0])
            new_room = self._step(queue, room, lend)
            short = None if request.fits(new_room) else request.shortfall(new_room)
            if short:
                return guarantee_refused(queue, request, room, new_room, short[0], lend)
            room = new_room
        return self._check_own(self.get(name), request, room, lend)

    def _check_own(self, queue: QueueState, request: Resources, room: Resources, lend: bool
                   ) -> PendingReason | None:
        """A job placed in a VC that has children is outside every child: it may use the
        VC's room less what its children are still owed (lent: less what they keep unlent)."""
        if not queue.children:
            return None
        kept = queue.children_unlent if lend else queue.children_reserved
        own_room = room.saturating_sub(kept)
        short = None if request.fits(own_room) else request.shortfall(own_room)
        if not short:
            return None
        dim = short[0]
        holders = [c.name for c in queue.children
                   if (c.unlent if lend else c.reserved).get(dim) > 0]
        what = "kept unlent by the lendingLimit" if lend else "the unused guaranteed min"
        return PendingReason(
            PendingKind.GUARANTEE,
            f"{room.get(dim)} {dim} is free for {queue.name!r}, but {kept.get(dim)} of it is "
            f"{what} of its children {', '.join(repr(h) for h in holders)}; its own jobs can "
            f"use {own_room.get(dim)} {dim}, {request.get(dim)} needed", resource=dim,
            queue=queue.name)

    def is_open_path(self, name: str) -> bool:
        """Whether `check` for the VC says what it says at the root: no guarantee owed
        anywhere (`owes_nothing`), so none is kept back from a sibling, and no `max` or
        borrowing ceiling on its path below the root (`unlimited_below_root`). A check that
        passes at the root then passes at every step, the room handed down unchanged."""
        return self.owes_nothing() and self.unlimited_below_root(name)

    def owes_nothing(self) -> bool:
        """Whether no virtual cluster is owed any of its guarantee: the root's children are
        owed none, so nobody below them is (what a VC is owed covers its children's), nor
        keeps any unlent (a part of what it is owed)."""
        return self.root.children_reserved.is_zero() and self.root.children_unlent.is_zero()

    def unlimited_below_root(self, name: str) -> bool:
        """Whether no VC on the path from below the root to `name` has a `max` or a
        borrowing ceiling (these move only with the tree's `layout`)."""
        return all(q.max.is_unlimited() and q.borrow_max.is_unlimited()
                   for q in self.get(name).path()[1:])

    def over_ceiling(self, name: str, request: Resources) -> bool:
        """Whether `request` would take the VC or an ancestor above its `max` or its
        `min + borrowingLimit`, whatever is free: only taking usage back inside that
        subtree lets it in."""
        return any(queue.max.exceeded_by(queue.usage, request)
                   or queue.borrow_max.exceeded_by(queue.usage, request)
                   for queue in self.get(name).path())

    def can_grant(self, name: str, guarantee: Resources) -> PendingReason | None:
        """None if a new child of the VC could be guaranteed `guarantee` now: the VC's
        headroom, less what it still owes its children, holds it. Otherwise why not."""
        queue = self.get(name)
        room = self.headroom(name).saturating_sub(queue.children_reserved)
        short = guarantee.shortfall(room)
        if not short:
            return None
        dim = short[0]
        return PendingReason(
            PendingKind.GUARANTEE,
            f"{name!r} can guarantee {room.get(dim)} {dim} more now (its headroom less what "
            f"it owes its children), {guarantee.get(dim)} needed", resource=dim, queue=name)

    def never_fits(self, name: str, request: Resources) -> PendingReason | None:
        """A reason if `request` exceeds the VC's or an ancestor's max, or the whole cluster,
        even with nothing else running. Carved fixed-size nodes count here as declared:
        with nothing else running, a VC may use them and its flexible part."""
        for queue in self.get(name).path():
            over = queue.spec_max.exceeded(request)
            if over:
                dim = over[0]
                return PendingReason(
                    PendingKind.UNSCHEDULABLE,
                    f"needs {request.get(dim)} {dim} but virtual cluster {queue.name!r} has "
                    f"max {dim}={queue.spec_max.get(dim)}", resource=dim, queue=queue.name)
            over = borrowing_ceiling(queue.spec_min, queue.borrowing_limit).exceeded(request)
            if over:
                dim = over[0]
                return PendingReason(
                    PendingKind.UNSCHEDULABLE,
                    f"needs {request.get(dim)} {dim} but virtual cluster {queue.name!r} may "
                    f"use at most its guarantee {queue.spec_min.get(dim)} plus its "
                    f"borrowingLimit {dim}={queue.borrowing_limit.get(dim)}",
                    resource=dim, queue=queue.name)
        physical = self.capacity + total(q.carved for q in self.root.children)
        short = request.shortfall(physical)
        if short:
            dim = short[0]
            return PendingReason(
                PendingKind.UNSCHEDULABLE,
                f"needs {request.get(dim)} {dim} but the whole cluster has "
                f"{physical.get(dim)}", resource=dim)
        return None


def borrowing_refused(queue: QueueState, request: Resources, dim: str) -> PendingReason:
    """Why `request` would take the VC's subtree above `min + borrowingLimit` in `dim`."""
    return PendingReason(
        PendingKind.QUEUE_LIMIT,
        f"virtual cluster {queue.name!r} would borrow above its borrowingLimit {dim}="
        f"{queue.borrowing_limit.get(dim)} (guaranteed {queue.min.get(dim)}, uses "
        f"{queue.usage.get(dim)}, {request.get(dim)} more needed)", resource=dim,
        queue=queue.name)


def guarantee_refused(queue: QueueState, request: Resources, room: Resources,
                      new_room: Resources, dim: str, lend: bool) -> PendingReason:
    """Why `request` does not fit what `queue` may borrow of its parent's free `room`: the
    siblings' guarantees (without lending) or what their lending limits keep (with it)."""
    assert queue.parent is not None
    siblings = [s for s in queue.parent.children if s is not queue]
    if lend:
        kept = (queue.parent.children_unlent - queue.unlent).get(dim)
        holders = [s.name for s in siblings if s.unlent.get(dim) > 0]
        what = f"kept unlent by the lendingLimit of {', '.join(repr(h) for h in holders)}"
    else:
        kept = (queue.parent.children_reserved - queue.reserved).get(dim)
        holders = [s.name for s in siblings if s.reserved.get(dim) > 0]
        what = f"the unused guaranteed min of {', '.join(repr(h) for h in holders)}"
    return PendingReason(
        PendingKind.GUARANTEE,
        f"{room.get(dim)} {dim} is free for {queue.parent.name!r}, but {kept} of it is "
        f"{what}; virtual cluster {queue.name!r} can borrow {new_room.get(dim)} {dim}, "
        f"{request.get(dim)} needed", resource=dim, queue=queue.name)


def _cap(room: Resources, limit: ResourceLimit, usage: Resources) -> Resources:
    """`room` with each limited dimension lowered to `max − usage`."""
    values = {"cpu": room.cpu, "memory": room.memory, "gpu": room.gpu}
    extras = dict(room.extras)
    for dim, value in limit.limits:
        allowed = max(0, value - usage.get(dim))
        if dim in values:
            values[dim] = min(values[dim], allowed)
        else:
            extras[dim] = min(extras.get(dim, 0), allowed)
    return Resources.of(values["cpu"], values["memory"], values["gpu"], extras)
