"""The decayed usage ledger (issue 17, `shoal.core.usage`): halved every half-life, charged
for what ran since the last charge, one entry per (virtual cluster, user), bounded."""

from __future__ import annotations

import pytest

from shoal.api import Job, Resources, Task, TaskGroup, TaskState
from shoal.core import usage as usage_module
from shoal.core.usage import (
    NO_USER,
    Holding,
    UsageKey,
    UsageLedger,
    UsageWeights,
    Used,
    job_holdings,
)

GPU2 = Resources.of(cpu=8000, memory=4096, gpu=2)


def test_a_value_halves_every_half_life() -> None:
    ledger = UsageLedger(100.0).charge([(UsageKey("a", "x"), Used(gpu=64.0))], 0.0)
    assert ledger.value("a", "x", 0.0).gpu == 64.0
    assert ledger.value("a", "x", 100.0).gpu == pytest.approx(32.0)
    assert ledger.value("a", "x", 300.0).gpu == pytest.approx(8.0)
    assert ledger.value("a", "x", -50.0).gpu == 64.0  # a clock that went back: no growth
    assert ledger.value("a", "nobody", 0.0) == Used()


def test_charging_decays_what_was_there_then_adds() -> None:
    ledger = UsageLedger(100.0).charge([(UsageKey("a", "x"), Used(gpu=10.0))], 0.0)
    later = ledger.charge([(UsageKey("a", "x"), Used(gpu=10.0)),
                           (UsageKey("a", "y"), Used(cpu=3.0))], 100.0)
    assert later.at == 100.0 and ledger.at == 0.0  # immutable: a new ledger
    assert later.value("a", "x", 100.0).gpu == pytest.approx(15.0)
    assert later.vc_value("a", 100.0) == Used(gpu=15.0, cpu=3.0)
    assert later.vc_value("b", 100.0) == Used()


def test_running_tasks_are_charged_since_the_last_charge_or_their_start() -> None:
    fresh = UsageLedger(1e12)
    first = fresh.charged([Holding("a", "x", GPU2, 10.0), Holding("a", "y", GPU2, None)],
                          30.0)
    # Never charged before: since the task started; a task not started yet: nothing.
    assert first.value("a", "x", 30.0) == Used(gpu=40.0, cpu=160.0, memory=80.0)
    assert UsageKey("a", "y") not in first.entries
    second = first.charged([Holding("a", "x", GPU2, 10.0), Holding("a", "z", GPU2, 35.0)],
                           40.0)
    assert second.value("a", "x", 40.0).gpu == pytest.approx(60.0)  # 20 s more, not 30
    assert second.value("a", "z", 40.0).gpu == pytest.approx(10.0)  # since its start


def test_weights_put_gpu_before_cpu_before_memory() -> None:
    weights = UsageWeights()
    assert weights.of(Used(gpu=1.0)) > weights.of(Used(cpu=1.0)) > weights.of(Used(memory=1.0))
    assert UsageWeights(gpu=2.0, cpu=0.0, memory=0.0).of(Used(gpu=3.0, cpu=5.0)) == 6.0


def test_the_ledger_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_module, "MAX_ENTRIES", 3)
    charges = [(UsageKey("a", f"u{i}"), Used(gpu=float(i + 1))) for i in range(6)]
    ledger = UsageLedger(100.0).charge(charges, 0.0)
    assert set(ledger.entries) == {UsageKey("a", "u5"), UsageKey("a", "u4"),
                                   UsageKey("a", "u3")}
    # What decays below a thousandth of a resource-second is forgotten.
    assert len(ledger.charge([], 100.0 * 40)) == 0


def test_bad_half_lives_are_refused() -> None:
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="half-life"):
            UsageLedger(bad)
    kept = UsageLedger(10.0).charge([(UsageKey("a", "x"), Used(gpu=1.0))], 5.0)
    assert kept.with_half_life(20.0).entries == kept.entries


def test_job_holdings_are_what_running_tasks_hold() -> None:
    group = TaskGroup("w", 3, GPU2)
    tasks = (Task("j", "w", 0, TaskState.RUNNING, "n0", (0, 1), 5.0),
             Task("j", "w", 1, TaskState.PENDING),
             Task("j", "w", 2, TaskState.BOUND, "n0", (2, 3), None))
    job = Job("j", (group,), queue="team", user=None, tasks=tasks)
    assert list(job_holdings([job])) == [Holding("team", NO_USER, GPU2, 5.0),
                                         Holding("team", NO_USER, GPU2, None)]
