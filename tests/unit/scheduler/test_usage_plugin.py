"""The usage plugin (issue 17): its arguments, the half-life drivers read from a profile,
and its orders — a virtual cluster by its whole subtree's usage per weight, a job by its
user's usage in its virtual cluster."""

from __future__ import annotations

import pytest

from shoal.api import Job, Node, Resources, TaskGroup, VirtualCluster
from shoal.core.snapshot import Snapshot
from shoal.core.usage import DEFAULT_HALF_LIFE, UsageKey, UsageLedger, Used
from shoal.scheduler.plugins.usage import Usage, UsageArguments, usage_half_life
from shoal.scheduler.profile import Profile, ProfileError
from shoal.scheduler.session import Session


def profile(arguments: dict[str, object]) -> Profile:
    return Profile.from_dict({"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "usage", "arguments": arguments}, {"name": "capacity"}]}]})


def test_the_half_life_comes_from_the_profile() -> None:
    assert usage_half_life(profile({"halfLife": 3600})) == 3600.0
    assert usage_half_life(profile({})) == DEFAULT_HALF_LIFE
    assert usage_half_life(Profile.default()) == DEFAULT_HALF_LIFE


@pytest.mark.parametrize("arguments, field", [
    ({"halfLife": 0}, "halfLife"), ({"halfLife": "inf"}, "halfLife"),
    ({"weights": {"gpu": -1}}, "weights.gpu"), ({"weights": {"tpu": 1}}, "weights.tpu"),
    ({"decay": 1}, "decay")])
def test_bad_arguments_name_the_field(arguments: dict[str, object], field: str) -> None:
    with pytest.raises(ProfileError, match=f"plugin 'usage' arguments: {field}"):
        profile(arguments)


def test_orders_read_the_ledger() -> None:
    vcs = (VirtualCluster("org"), VirtualCluster("a", "org"), VirtualCluster("b", "org"),
           VirtualCluster("solo", weight=4))
    ledger = UsageLedger(100.0, 0.0, {
        UsageKey("a", "alice"): Used(gpu=10.0), UsageKey("b", "bob"): Used(gpu=20.0),
        UsageKey("solo", "carol"): Used(gpu=100.0, cpu=1000.0),
        UsageKey("gone", "dave"): Used(gpu=1e9)})
    group = (TaskGroup("w", 1, Resources.of(gpu=1)),)
    jobs = (Job("j1", group, queue="a", user="alice"), Job("j2", group, queue="a", user="erin"),
            Job("j3", group, queue="a"))
    snapshot = Snapshot((Node("n", Resources.of(gpu=1)),), jobs, vcs, now=50.0, usage=ledger)
    plugin = Usage(UsageArguments.model_validate({"weights": {"cpu": 0.1}}))
    session = Session(snapshot, [plugin])
    quota = session.quota
    assert plugin.queue_order_key(quota.get("org")) == (30.0,)  # its children's together
    assert plugin.queue_order_key(quota.get("solo")) == ((100.0 + 100.0) / 4,)
    assert plugin.queue_order_key(quota.get("a")) < plugin.queue_order_key(quota.get("b"))
    keys = {name: plugin.job_order_key(session.jobs[name]) for name in ("j1", "j2", "j3")}
    assert keys == {"j1": (10.0,), "j2": (0.0,), "j3": (0.0,)}
