"""The durable dispatcher with REAL members (issue 19): two `shoal up` members — `big`
(priority 90) and `small` (priority 10), each a node of 2 fake GPUs — and the super scheduler
`shoal up --clusters`, one set for the module. Between the super scheduler and `small`, two
gates (tests/integration/federation/mc_gate.py: real HTTP servers) inject the faults: a
member that hangs, one that answers 500s, a submission whose answer is lost. Every copy a
test cancels is checked ON ITS MEMBER, through that member's own API; `kill -9` of the super
scheduler after a copy's intent, in the guard window and mid-cancel is followed by a restart
and the check that every member holds at most one live copy and the job ends right."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mc_gate import Gate, Mode
from shoal_documents import job_yaml, multicluster_job_yaml, node_yaml
from shoal_up_process import Up, until
from task_users import Scratch
from typer.testing import CliRunner

from shoal.cli.main import app
from shoal.client import ShoalApiError
from shoal.client.multicluster import McJobView

LIVE = ("Pending", "Running")

@dataclass
class World:
    big: Up
    small: Up
    sup: Up
    hang: Gate
    broken: Gate
    gate: Gate
    """Passes to `small` by default; a test makes it withhold or fail."""

    def mc(self, name: str) -> McJobView:
        with self.sup.client() as c:
            return c.multicluster_job(name)

    def member_state(self, up: Up, name: str) -> str | None:
        with up.client() as c:
            try:
                return c.get_job(name).state.value
            except ShoalApiError as exc:
                if exc.status == 404:
                    return None
                raise

    def live_copies(self, up: Up, job: str) -> list[str]:
        with up.client() as c:
            return [j.name for j in c.iter_jobs()
                    if j.name.startswith(job + "-") and j.state.value in LIVE]

    def submit(self, text: str) -> str:
        with self.sup.client() as c:
            return c.submit_multicluster(text).name

    def restart_super(self) -> None:
        self.sup.start()


def clusters_file(world_dir: Path, big: Up, small: Up, hang: Gate, broken: Gate,
                  gate: Gate) -> Path:
    def doc(alias: str, uri: str, priority: int, token: Path) -> str:
        return textwrap.dedent(f"""\
            apiVersion: shoal/v1
            kind: Cluster
            metadata: {{name: {alias}}}
            spec: {{uri: '{uri}', kind: shoal, priority: {priority}, gpuType: fake,
                    credentials: {{tokenFile: '{token}'}}}}
            """)
    text = "---\n".join([
        doc("big", big.url, 90, big.token_file), doc("small", small.url, 10, small.token_file),
        doc("hang", hang.url, 50, small.token_file),
        doc("broken", broken.url, 60, small.token_file),
        doc("gate", gate.url, 10, small.token_file)])
    path = world_dir / "clusters.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    scratch = Scratch()
    ups: list[Up] = []
    gates: list[Gate] = []
    try:
        for name in ("big", "small"):
            home = tmp_path_factory.mktemp(name)
            (home / "cluster.yaml").write_text(node_yaml())
            up = Up(home, [], scratch)
            up.start()
            ups.append(up)
        big, small = ups
        hang, broken, gate = (Gate(small.url, Mode.SILENT), Gate(small.url, Mode.ERROR),
                              Gate(small.url, Mode.PASS))
        gates += [hang, broken, gate]
        home = tmp_path_factory.mktemp("super")
        (home / "cluster.yaml").write_text(node_yaml())
        registry = clusters_file(home, big, small, hang, broken, gate)
        sup = Up(home, ["--clusters", str(registry), "--mc-poll", "0.2",
                        "--mc-timeout", "2"], scratch)
        sup.start()
        ups.append(sup)
        yield World(big, small, sup, hang, broken, gate)
    finally:
        for g in gates:
            g.close()
        for up in ups:
            up.stop()
        scratch.close()


def job(name: str, members: str, *, policy: str = "fac-priority", guard: str = "2s",
        scale: str = "0.05s", gpu: int = 0) -> str:
    """A job over `members` (aliases), each URI written `URI_<alias>` (`with_uris`)."""
    gpu_line = f", gpu: {gpu}" if gpu else ""
    cpu = str(gpu) if gpu else "100m"  # a member asks 1 CPU per GPU
    return multicluster_job_yaml(name, {a: f"URI_{a}" for a in members.split()},
                                 policy=policy, guard=guard, scale=scale,
                                 resources=f"{{cpu: {cpu}, memory: 64Mi{gpu_line}}}")


def with_uris(world: World, text: str) -> str:
    for alias, url in (("big", world.big.url), ("small", world.small.url),
                       ("hang", world.hang.url), ("broken", world.broken.url),
                       ("gate", world.gate.url)):
        text = text.replace(f"URI_{alias}", url)
    return text


def stop_and_wait(world: World, name: str) -> McJobView:
    with world.sup.client() as c:
        c.stop_multicluster(name)
    return until(f"{name} ended", lambda: (j := world.mc(name)).final and j)


def test_fac_priority_ends_on_big_and_small_is_cancelled_on_small(world: World) -> None:
    name = world.submit(with_uris(world, job("prio", "big small")))
    done = until("prio kept", lambda: (j := world.mc(name)).kept and j)
    assert done.kept == "big" and done.state == "RUNNING"
    until("small's copy cancelled on small",
          lambda: world.member_state(world.small, "prio-small") == "Cancelled")
    assert world.member_state(world.big, "prio-big") == "Running"
    result = CliRunner().invoke(app, ["mc", "get", name, "--server", world.sup.url, "--token",
                                      world.sup.token_file.read_text().strip()])
    assert result.exit_code == 0, result.output
    assert "kept" in result.output and "cancelled" in result.output
    assert "prio-big" in result.output
    stop_and_wait(world, name)
    until("prio-big cancelled on big",
          lambda: world.member_state(world.big, "prio-big") == "Cancelled")


def test_fac_priority_keeps_small_when_big_is_full(world: World) -> None:
    blocker = job_yaml("blocker", queue=None, replicas=1, gpu=2, cpu="2", memory="64Mi",
                       command="[sleep, '600']")
    with world.big.client() as c:
        c.submit(blocker)
    until("blocker runs", lambda: world.member_state(world.big, "blocker") == "Running")
    try:
        name = world.submit(with_uris(world, job("full", "big small", gpu=1)))
        done = until("full kept", lambda: (j := world.mc(name)).kept and j)
        assert done.kept == "small"
        until("big's copy cancelled on big",
              lambda: world.member_state(world.big, "full-big") == "Cancelled")
        big_copy = next(c for c in world.mc(name).copies if c.cluster == "big")
        assert big_copy.verdict == "cancelled" and "window" in big_copy.why
        stop_and_wait(world, name)
    finally:
        with world.big.client() as c:
            c.cancel("blocker")


def test_fac_keeps_one_copy(world: World) -> None:
    name = world.submit(with_uris(world, job("facjob", "big small", policy="fac")))
    done = until("facjob kept", lambda: (j := world.mc(name)).kept and j)
    loser = world.small if done.kept == "big" else world.big
    other = "small" if done.kept == "big" else "big"
    until("the loser cancelled on its member",
          lambda: world.member_state(loser, f"facjob-{other}") == "Cancelled")
    stop_and_wait(world, name)


def test_hanging_and_failing_members_are_reported_and_skipped(world: World) -> None:
    name = world.submit(with_uris(world, job("faulty", "big hang broken")))
    done = until("faulty kept", lambda: (j := world.mc(name)).kept and j)
    assert done.kept == "big"
    with world.sup.client() as c:
        health = {m.alias: m for m in c.member_clusters()}
    assert health["broken"].reachable is False and "500" in health["broken"].last_error
    until("hang reported down", lambda: _down(world, "hang"))
    assert "is down" in world.mc(name).reason
    assert world.broken.count("POST /api/v1/jobs") == 0  # never got through, never ran
    world.hang.set(Mode.SILENT)  # let its held requests go
    stop_and_wait_or_stopping(world, name)


def _down(world: World, alias: str) -> bool:
    with world.sup.client() as c:
        return any(m.alias == alias and m.reachable is False for m in c.member_clusters())


def stop_and_wait_or_stopping(world: World, name: str) -> None:
    """Stop a job whose members include one that never answers: its copy there can never be
    seen final, so the job stays stopping; its reachable copies end."""
    with world.sup.client() as c:
        c.stop_multicluster(name)
    until("big's copy cancelled",
          lambda: world.member_state(world.big, f"{name}-big") == "Cancelled")


def test_a_lost_winner_is_dispatched_again(world: World) -> None:
    name = world.submit(with_uris(world, job("lost", "big small")))
    until("lost kept on big", lambda: world.mc(name).kept == "big")
    with world.big.client() as c:
        c.cancel("lost-big")  # someone stops the winner on its member
    again = until("round 1", lambda: (j := world.mc(name)).round == 1 and j)
    assert again.state in ("WAITING", "RUNNING")
    until("round 1 kept on big",
          lambda: (j := world.mc(name)).kept == "big" and j.round == 1)
    assert world.member_state(world.big, "lost-big-r1") == "Running"
    stop_and_wait(world, name)


def test_kill_after_the_intent_never_submits_twice(world: World) -> None:
    world.gate.set(Mode.WITHHOLD)
    name = world.submit(with_uris(world, job("ka", "big gate")))
    until("the gate copy's submission reached small",
          lambda: world.member_state(world.small, "ka-gate") is not None)
    copy = next(c for c in world.mc(name).copies if c.cluster == "gate")
    assert copy.remote_id is None  # intent stored, answer never came
    world.sup.kill9()
    world.gate.set(Mode.PASS)
    world.restart_super()
    done = until("ka kept", lambda: (j := world.mc(name)).kept and j)
    assert done.kept == "big"
    gate_copy = until("gate copy found by name",
                      lambda: next(c for c in world.mc(name).copies
                                   if c.cluster == "gate").remote_id)
    assert gate_copy == "ka-gate"
    assert world.gate.count("POST /api/v1/jobs") == 1  # found by name, never sent twice
    until("ka-gate cancelled on small",
          lambda: world.member_state(world.small, "ka-gate") == "Cancelled")
    assert world.live_copies(world.big, "ka") == ["ka-big"]
    assert world.live_copies(world.small, "ka") == []
    stop_and_wait(world, name)


def test_kill_in_the_guard_window_keeps_one_copy(world: World) -> None:
    name = world.submit(with_uris(world, job("kb", "big small", policy="fac", guard="4s")))
    until("both copies run", lambda: all(
        world.member_state(up, f"kb-{a}") == "Running"
        for up, a in ((world.big, "big"), (world.small, "small"))))
    assert world.mc(name).kept is None  # inside the guard window
    world.sup.kill9()
    world.restart_super()
    done = until("kb kept", lambda: (j := world.mc(name)).kept and j)
    until("one live copy across members", lambda: len(world.live_copies(world.big, "kb"))
          + len(world.live_copies(world.small, "kb")) == 1)
    keeper = world.big if done.kept == "big" else world.small
    assert world.live_copies(keeper, "kb") == [f"kb-{done.kept}"]
    stop_and_wait(world, name)


def test_kill_mid_cancel_issues_the_stored_cancel(world: World) -> None:
    blocker = textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Job
        metadata: {name: blocker-c}
        spec:
          taskGroups:
            - {name: w, replicas: 1, resources: {cpu: 2, memory: 64Mi, gpu: 2},
               command: [sleep, '600']}
        """)
    with world.big.client() as c:
        c.submit(blocker)
    until("blocker-c runs", lambda: world.member_state(world.big, "blocker-c") == "Running")
    name = world.submit(with_uris(world, job("kc", "big gate", gpu=1, scale="10s")))
    until("kc's gate copy runs on small",
          lambda: world.member_state(world.small, "kc-gate") == "Running")
    until("kc's gate copy known", lambda: next(
        c for c in world.mc(name).copies if c.cluster == "gate").remote_id)
    world.gate.set(Mode.ERROR)  # the cancel to come cannot get through
    with world.big.client() as c:
        c.cancel("blocker-c")  # big runs its copy: the gate's is cancelled at once
    until("the gate copy's cancel stored", lambda: next(
        c for c in world.mc(name).copies if c.cluster == "gate").cancel_requested_at)
    assert world.member_state(world.small, "kc-gate") == "Running"
    world.sup.kill9()
    world.gate.set(Mode.PASS)
    world.restart_super()
    until("kc-gate cancelled on small",
          lambda: world.member_state(world.small, "kc-gate") == "Cancelled")
    done = until("kc kept", lambda: (j := world.mc(name)).kept and j)
    assert done.kept == "big" and world.member_state(world.big, "kc-big") == "Running"
    stop_and_wait(world, name)


def test_no_token_in_the_super_schedulers_answers_or_log(world: World) -> None:
    tokens = [up.token_file.read_text().strip() for up in (world.big, world.small)]
    with world.sup.client() as c:
        texts = [str([m.raw for m in c.member_clusters()]),
                 str([j.raw for j in c.multicluster_jobs()])]
    log = world.sup.log()
    db = (world.sup.home / ".shoal" / "shoal.db").read_bytes()
    for token in tokens:
        assert all(token not in t for t in texts)
        assert token not in log
        assert token.encode() not in db
    assert os.stat(world.sup.home / ".shoal" / "mc-secrets.key").st_mode & 0o777 == 0o600
