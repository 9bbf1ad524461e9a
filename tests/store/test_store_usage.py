"""Issue 17's fairness across users in the store: a virtual cluster's `maxPerUser` and the
control plane's decayed usage ledger, kept across a restart (a new `Repository` over the
same database reads what the old one wrote)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from sqlalchemy import select

from shoal.api import ResourceLimit, Resources, VirtualCluster
from shoal.core.usage import NO_USER, Holding, UsageKey, UsageLedger
from shoal.store import Repository, Store
from shoal.store.models import UsageRow, VirtualClusterRow


def test_max_per_user_round_trips(repo: Repository) -> None:
    limited = VirtualCluster("team", max_per_user=ResourceLimit.of({"gpu": 4, "cpu": 32000}))
    plain = VirtualCluster("plain")
    repo.put_virtual_cluster(limited)
    repo.put_virtual_cluster(plain)
    assert repo.list_virtual_clusters() == [limited, plain]
    repo.put_virtual_cluster(replace(limited, max_per_user=ResourceLimit()))
    assert repo.list_virtual_clusters()[0].max_per_user.is_unlimited()
    with repo.store.reads.begin() as s:
        row = s.scalars(select(VirtualClusterRow).where(VirtualClusterRow.name == "plain")).one()
        assert row.max_per_user == {}


def test_an_empty_store_gives_a_ledger_never_charged(repo: Repository) -> None:
    ledger = repo.load_usage(3600.0)
    assert ledger.at is None and len(ledger) == 0 and ledger.half_life == 3600.0
    repo.record_usage(ledger)  # never charged: nothing is written
    with repo.store.reads.begin() as s:
        assert list(s.scalars(select(UsageRow))) == []


def test_usage_survives_a_restart(store: Store) -> None:
    ledger = UsageLedger(3600.0).charged(
        [Holding("team", "alice", Resources.of(cpu=8000, memory=32768, gpu=2), 0.0),
         Holding("team", NO_USER, Resources.of(gpu=1), 50.0),
         Holding("other", "bob", Resources.of(cpu=1000), 0.0)], 100.0)
    Repository(store).record_usage(ledger)
    back = Repository(store).load_usage(3600.0)
    assert back.at == 100.0
    assert dict(back.entries) == dict(ledger.entries)
    assert back.value("team", "alice", 3700.0).gpu == pytest.approx(100.0)
    # Rewritten whole: a user the ledger no longer holds is gone from the store.
    smaller = UsageLedger(3600.0, 200.0, {UsageKey("team", "alice"): ledger.entries[
        UsageKey("team", "alice")]})
    Repository(store).record_usage(smaller)
    assert set(Repository(store).load_usage(3600.0).entries) == {UsageKey("team", "alice")}


def test_rows_charged_at_different_times_are_brought_to_the_latest(store: Store) -> None:
    with store.sessions.begin() as s:
        s.add_all([UsageRow(vc="a", user="x", gpu_seconds=8.0, cpu_seconds=0.0,
                            memory_seconds=0.0, at=0.0, half_life=10.0),
                   UsageRow(vc="a", user="y", gpu_seconds=8.0, cpu_seconds=0.0,
                            memory_seconds=0.0, at=20.0, half_life=10.0)])
    ledger = Repository(store).load_usage(10.0)
    assert ledger.at == 20.0
    assert ledger.value("a", "x", 20.0).gpu == pytest.approx(2.0)
    assert ledger.value("a", "y", 20.0).gpu == pytest.approx(8.0)
    assert math.isclose(ledger.vc_value("a", 30.0).gpu, 5.0)
