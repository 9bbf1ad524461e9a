"""The durable dispatcher over in-memory members on a fake clock (issue 19): FAC and
FAC-priority end on the right member with every other copy cancelled on its member; a
restart at every phase (intent stored but no answer, guard window, mid-cancel) sends no copy
twice and leaves none orphaned; a member that is down is reported, not fatal; a lost winner
is retried under its own name; secrets are sealed and a job's own token is used."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest
from mc_fakes import Clock, Members

from shoal.api.federation import ClusterKind, CopyState, MemberCluster
from shoal.federation.dispatcher import Dispatcher, MemberMisconfiguredError
from shoal.federation.intake import take_in
from shoal.federation.lanes import MemberHealth, MemberLanes
from shoal.federation.members.contract import MemberAdapter, MemberCredentials
from shoal.federation.members.slurm import SlurmMember
from shoal.federation.registry import ClusterRegistry, load_registry
from shoal.spec.errors import SpecError
from shoal.store import Store
from shoal.store.federation import FederationRecords, NewMcJob
from shoal.store.federation_secrets import SecretBox, key_box

TOKEN = "user-token-for-big-0xDEADBEEF"


def registry(tmp_path: Path) -> ClusterRegistry:
    (tmp_path / "reg.token").write_text("registry-token\n")
    text = "".join(textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {{name: {alias}}}
        spec: {{uri: 'http://{alias}.example', kind: shoal, priority: {p},
                credentials: {{tokenFile: reg.token}}}}
        ---
        """) for alias, p in (("big", 90), ("small", 10)))
    return load_registry(text, "clusters.yaml", base_dir=tmp_path)


def job_text(name: str = "mc", policy: str = "fac-priority", guard: str = "2s",
             scale: str = "1s", secrets: bool = True) -> str:
    token = f"\n  secrets: {{token-big: {TOKEN}}}" if secrets else ""
    return textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: MultiClusterJob
        metadata: {{name: {name}}}
        spec:
          clusters: {{big: {{uri: 'http://big.example'}}, small: {{uri: 'http://small.example'}}}}
          policy: {policy}
          guardTimeRunning: {guard}
          timeScale: {scale}
          template:
            taskGroups:
              - {{name: w, replicas: 1, resources: {{cpu: 1}}, command: [sleep, '60']}}
        """).rstrip("\n") + token + "\n"


class World:
    """A store, a registry, members and a clock; `dispatcher()` is a fresh process."""

    def __init__(self, store: Store, tmp_path: Path) -> None:
        self.store = store
        self.records = FederationRecords(store)
        self.registry = registry(tmp_path)
        self.box: SecretBox = key_box(tmp_path)
        self.members = Members("big", "small")
        self.clock = Clock()

    def submit(self, text: str, retries: int = 0) -> str:
        intake = take_in(text, self.registry)
        self.records.create_job(NewMcJob(
            intake.job.name, "alice", intake.document, intake.job.policy,
            intake.job.guard_time_running_s, intake.job.time_scale_s, retries,
            self.box.seal(intake.secrets) if intake.secrets else None, self.clock()))
        return intake.job.name

    def dispatcher(self) -> Dispatcher:
        return Dispatcher(self.records, self.registry, self.box, self.clock,
                          adapters=self.members, settle_s=5.0,
                          lanes=MemberLanes(self.clock, backoff_base_s=1.0, backoff_cap_s=4.0))

    def run(self, dispatcher: Dispatcher, seconds: float, step: float = 0.5) -> None:
        end = self.clock.now + seconds
        while self.clock.now < end:
            dispatcher.step(self.clock.now)
            self.clock.now += step
        dispatcher.step(self.clock.now)


@pytest.fixture
def world(store: Store, tmp_path: Path) -> World:
    return World(store, tmp_path)


def state(world: World, name: str = "mc") -> CopyState:
    job = world.records.get_job(name)
    assert job is not None
    return job.state


def test_priority_keeps_the_big_member_and_cancels_small_on_the_member(world: World) -> None:
    world.submit(job_text())
    d = world.dispatcher()
    d.step(world.clock.now)
    big, small = world.members["big"], world.members["small"]
    assert big.submits == ["mc-big"] and small.submits == ["mc-small"]
    small.set("mc-small", CopyState.RUNNING)
    world.run(d, 1.0)  # big's window (90-10)*1 s is open: small is not kept
    job = world.records.get_job("mc")
    assert job is not None and job.kept is None and small.cancels == []
    big.set("mc-big", CopyState.RUNNING)
    world.run(d, 4.0)
    job = world.records.get_job("mc")
    assert job is not None and job.kept == "big" and job.state is CopyState.RUNNING
    assert small.copies["mc-small"] is CopyState.STOPPED and small.cancels
    verdicts = {c.alias: (c.verdict, c.verdict_reason) for c in job.copies}
    assert verdicts["big"][0] == "kept" and verdicts["small"][0] == "cancelled"
    assert verdicts["small"][1]
    # The job's own token went to big; small was reached with the registry's.
    assert set(big.tokens) == {TOKEN} and set(small.tokens) == {"registry-token"}
    big.set("mc-big", CopyState.SUCCEEDED)
    world.run(d, 1.0)
    assert state(world) is CopyState.SUCCEEDED and world.records.active_jobs() == []


def test_fac_keeps_the_earliest_running(world: World) -> None:
    world.submit(job_text(policy="fac"))
    d = world.dispatcher()
    d.step(world.clock.now)
    world.members["small"].set("mc-small", CopyState.RUNNING)
    world.run(d, 1.0)
    world.members["big"].set("mc-big", CopyState.RUNNING)
    world.run(d, 3.0)
    job = world.records.get_job("mc")
    assert job is not None and job.kept == "small"
    assert world.members["big"].copies["mc-big"] is CopyState.STOPPED


def test_a_restart_after_the_intent_finds_the_copy_and_never_submits_twice(
        world: World) -> None:
    world.submit(job_text())
    world.members["big"].lose_answer = True  # big takes it, the answer never comes back
    first = world.dispatcher()
    first.step(world.clock.now)
    job = world.records.get_job("mc")
    assert job is not None
    big_copy = job.copy(0, "big")
    assert big_copy is not None and big_copy.remote_id is None  # intent only
    # kill -9 here: a new dispatcher over the same store.
    world.members["big"].lose_answer = False
    world.clock.now += 5  # past the member's backoff
    second = world.dispatcher()
    second.step(world.clock.now)
    job = world.records.get_job("mc")
    assert job is not None
    big_copy = job.copy(0, "big")
    assert big_copy is not None and big_copy.remote_id == "mc-big"
    assert world.members["big"].submits == ["mc-big"]


def test_a_restart_in_the_guard_window_and_mid_cancel_keeps_one_copy(world: World) -> None:
    world.submit(job_text(policy="fac"))
    d = world.dispatcher()
    d.step(world.clock.now)
    world.members["big"].set("mc-big", CopyState.RUNNING)
    world.members["small"].set("mc-small", CopyState.RUNNING)
    world.run(d, 1.0)  # inside the 2 s guard window
    world.members["small"].down = True  # its cancel cannot be issued yet
    world.run(world.dispatcher(), 3.0)
    job = world.records.get_job("mc")
    assert job is not None and job.kept is not None
    loser = "small" if job.kept == "big" else "big"
    copy = job.copy(0, loser)
    assert copy is not None and copy.cancel_requested_at is not None
    # Another restart mid-cancel, the member back: the stored cancel is issued.
    world.members["small"].down = False
    world.clock.now += 10
    world.run(world.dispatcher(), 2.0)
    for member in world.members.by_alias.values():
        assert len(member.live()) <= 1
    assert sum(len(m.live()) for m in world.members.by_alias.values()) == 1
    assert state(world) is CopyState.RUNNING


def test_a_member_that_is_down_is_reported_and_the_job_runs_elsewhere(world: World) -> None:
    world.members["big"].down = True
    world.submit(job_text(scale="0s"))
    d = world.dispatcher()
    d.step(world.clock.now)
    world.members["small"].set("mc-small", CopyState.RUNNING)
    world.run(d, 3.0)
    job = world.records.get_job("mc")
    assert job is not None and job.kept == "small"
    assert "'big' is down" in job.reason
    health = d.health("big")
    assert health.reachable is False and "500" in health.last_error
    assert d.health("small").reachable is True


def test_a_member_whose_adapter_cannot_be_built_is_reported_misconfigured(
        world: World, tmp_path: Path) -> None:
    # big is a Slurm member registered without a user: its adapter refuses to be built.
    def adapters(member: MemberCluster, creds: MemberCredentials) -> MemberAdapter:
        if member.alias == "big":
            return SlurmMember(dataclasses.replace(member, kind=ClusterKind.SLURM), creds)
        return world.members(member, creds)

    world.submit(job_text(scale="0s", secrets=False))
    d = Dispatcher(world.records, world.registry, world.box, world.clock, adapters=adapters,
                   settle_s=5.0, lanes=MemberLanes(world.clock))
    d.step(world.clock.now)  # no crash: the pass goes on with small
    world.members["small"].set("mc-small", CopyState.RUNNING)
    world.run(d, 3.0)
    job = world.records.get_job("mc")
    assert job is not None and job.kept == "small"
    health = d.health("big")
    assert health.reachable is False
    assert health.last_error.startswith("cluster 'big': misconfigured: a slurm member needs")
    assert "'big' is down (cluster 'big': misconfigured" in job.reason
    big = next(c for c in job.copies if c.alias == "big")
    assert big.remote_id is None and "misconfigured" in big.last_error
    assert "registry-token" not in health.last_error + job.reason + big.last_error
    with pytest.raises(MemberMisconfiguredError):  # the log is asked of big's copy: refused
        d._adapter(job, "big")

    # Its token file gone: the registry's credentials cannot be read; said, not raised.
    (tmp_path / "reg.token").unlink()
    world.submit(job_text("mc2", scale="0s", secrets=False))
    d.step(world.clock.now)
    assert "tokenFile" in d.health("small").last_error
    assert d.health("small").last_error.startswith("cluster 'small': misconfigured: ")


def test_a_lost_winner_is_retried_under_a_new_name(world: World) -> None:
    world.submit(job_text(scale="0s"), retries=1)
    d = world.dispatcher()
    d.step(world.clock.now)
    world.members["small"].set("mc-small", CopyState.RUNNING)
    world.run(d, 3.0)
    assert world.records.get_job("mc").kept == "small"  # type: ignore[union-attr]
    del world.members["small"].copies["mc-small"]  # the member lost it
    world.run(d, 1.0)
    job = world.records.get_job("mc")
    assert job is not None and job.round == 1
    assert world.members["big"].submits == ["mc-big", "mc-big-r1"]
    assert world.members["small"].submits == ["mc-small", "mc-small-r1"]
    lost = job.copy(0, "small")
    assert lost is not None and lost.lost and lost.state is CopyState.FAILED


def test_stop_cancels_every_copy(world: World) -> None:
    world.submit(job_text())
    d = world.dispatcher()
    d.step(world.clock.now)
    world.records.request_stop("mc", world.clock.now)
    world.run(d, 1.0)
    assert state(world) is CopyState.STOPPED
    assert all(not m.live() for m in world.members.by_alias.values())


def test_a_job_naming_an_unregistered_member_or_uri_is_refused(world: World) -> None:
    text = job_text().replace("http://small.example", "http://169.254.169.254")
    with pytest.raises(SpecError) as caught:
        take_in(text, world.registry)
    (issue,) = caught.value.issues
    assert issue.path == "spec.clusters.small.uri" and "registered URI" in issue.message
    text = job_text().replace("small:", "other:")
    with pytest.raises(SpecError) as caught:
        take_in(text, world.registry)
    assert caught.value.issues[0].path == "spec.clusters.other"


def test_the_stored_document_holds_no_secret(world: World) -> None:
    world.submit(job_text())
    job = world.records.get_job("mc")
    assert job is not None and TOKEN not in job.document
    assert TOKEN not in (world.records.sealed_secrets("mc") or "")


def test_a_members_backoff_doubles_up_to_its_cap() -> None:
    clock = Clock(0.0)
    lanes = MemberLanes(clock, backoff_base_s=1.0, backoff_cap_s=4.0)
    delays = []
    for _ in range(5):
        lanes.failed("big", "no answer within 2 s")
        health = lanes.health("big")
        assert health.retry_at is not None and not lanes.ready("big", clock.now)
        delays.append(health.retry_at - clock.now)
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert lanes.ready("big", clock.now + 4.0) and lanes.ready("small", clock.now)
    lanes.answered("big")
    assert lanes.health("big") == MemberHealth(reachable=True)
    lanes.close()
