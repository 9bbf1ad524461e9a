"""The quota tree's `lending` switch: while a preemptor that evicted its queue-mates is
placed (`shoal.scheduler.queue_preemption`), `check` answers as if nothing were lent."""

from shoal.api import PendingKind, Resources, VirtualCluster
from shoal.core.quota import QuotaTree


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


def tree() -> QuotaTree:
    # root (8 GPUs) ─ team (min 4), vision (min 4, idle)
    return QuotaTree([VirtualCluster("team", min=gpu(4)), VirtualCluster("vision", min=gpu(4))],
                     gpu(8))


def test_lent_guarantees_are_withheld_while_lending_is_off() -> None:
    t = tree()
    assert t.check("team", gpu(8), lend=True) is None  # vision's idle 4 may be lent
    t.lending = False
    reason = t.check("team", gpu(8), lend=True)
    assert reason is not None and reason.kind is PendingKind.GUARANTEE
    assert t.check("team", gpu(4), lend=True) is None  # its own guarantee is always there
    t.lending = True
    assert t.check("team", gpu(8), lend=True) is None  # a cached answer is not reused


def test_lending_off_changes_nothing_for_a_request_that_does_not_borrow_a_guarantee() -> None:
    t = QuotaTree([VirtualCluster("team", min=gpu(4))], gpu(8))
    t.lending = False
    # Nobody else is owed the other 4 GPUs: borrowing them reclaims nothing from anyone.
    assert t.check("team", gpu(8), lend=True) is None
