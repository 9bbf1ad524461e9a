"""The super scheduler end to end over members of all three live kinds (issue 19): a
`shoal up` member `pool` (priority 50, a node of 2 fake GPUs), the folder's real Slurm
`slurm` (priority 90; slurmrestd with a JWT, `cpu1` and `gpu1` with one fake GPU as GRES) and
its real Ray head `ray` (priority 30; one fake GPU, the Jobs API behind a token), registered
in one clusters file with their credentials by reference (`tokenFile`, `tokenEnv`), and the
super scheduler `shoal up --clusters` — one set for the module, the engines shared with the
folder (conftest.py).

Every copy the super scheduler cancels is checked ON ITS MEMBER, in the member's own words:
the Shoal member's API, `squeue` / `scontrol show job` on the Slurm, Ray's Jobs API. Every
wait polls a condition; the deadline is only a safety net.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ray_member_cluster import RayMemberCluster
from shared_engines import SharedEngines
from shoal_documents import job_yaml, multicluster_job_yaml, node_yaml
from shoal_up_process import Up, until
from slurm_member_cluster import JOB_USER, SlurmMemberCluster
from task_users import Scratch
from typer.testing import CliRunner

from shoal.cli.main import app
from shoal.client import ShoalApiError
from shoal.client.multicluster import McCopyView, McJobView

RAY_TOKEN_ENV = "SHOAL_E2E_RAY_TOKEN"
PRIORITIES = {"slurm": 90, "pool": 50, "ray": 30}


@dataclass
class Engines:
    pool: Up
    sup: Up
    slurm: SlurmMemberCluster
    ray: RayMemberCluster

    def uri(self, alias: str) -> str:
        return {"pool": self.pool.url, "slurm": self.slurm.uri, "ray": self.ray.uri}[alias]

    def mc(self, name: str) -> McJobView:
        with self.sup.client() as c:
            return c.multicluster_job(name)

    def copy(self, name: str, alias: str) -> McCopyView:
        copy = self.copy_or_none(name, alias)
        assert copy is not None, f"{name}: no copy on {alias!r}"
        return copy

    def copy_or_none(self, name: str, alias: str) -> McCopyView | None:
        """The job's copy on `alias`; None before the dispatcher has stored it."""
        return next((c for c in self.mc(name).copies if c.cluster == alias), None)

    def copy_state(self, name: str, alias: str) -> str | None:
        copy = self.copy_or_none(name, alias)
        return None if copy is None else copy.state

    def submit(self, name: str, *, policy: str, gpu: int, guard: str = "1s",
               scale: str = "0.05s") -> str:
        text = multicluster_job_yaml(
            name, {a: self.uri(a) for a in PRIORITIES}, policy=policy, guard=guard,
            scale=scale, resources=f"{{cpu: 1, memory: 64Mi, gpu: {gpu}}}",
            command=f"[sh, -c, 'echo hello from {name}; sleep 600']")
        with self.sup.client() as c:
            return c.submit_multicluster(text).name

    def pool_state(self, copy_name: str) -> str | None:
        """The copy's state on the Shoal member, through its own API (None: it has none)."""
        with self.pool.client() as c:
            try:
                return c.get_job(copy_name).state.value
            except ShoalApiError as exc:
                if exc.status == 404:
                    return None
                raise

    def ray_state(self, copy_name: str) -> str | None:
        """The copy's status on the Ray head, through its Jobs API (None: it has none)."""
        response = httpx.get(f"{self.ray.uri}/api/jobs/{copy_name}", timeout=30,
                             headers={"Authorization": f"Bearer {self.ray.token}"})
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return str(response.json()["status"])

    def slurm_state(self, remote_id: str) -> str:
        """`JobState` as `scontrol show job` on the Slurm member says it."""
        return self.slurm.job_field(remote_id, "JobState")

    def on_member(self, alias: str, copy_name: str) -> bool:
        """Whether the member holds a job of that name at all."""
        if alias == "pool":
            return self.pool_state(copy_name) is not None
        if alias == "ray":
            return self.ray_state(copy_name) is not None
        names = self.slurm.slurm.command("squeue", "-h", "-t", "all", "-o", "%j").split()
        return copy_name in names

    def stop_unfinished(self) -> None:
        """Stop every multi-cluster job not ended yet and wait until each has: a test that
        failed half way leaves no copy holding a member's GPU for the next one."""
        with self.sup.client() as c:
            left = [j.name for j in c.multicluster_jobs() if not j.final]
            for name in left:
                c.stop_multicluster(name)
        for name in left:
            until(f"{name} stopped", lambda name=name: self.mc(name).final)

    def cli(self, *args: str) -> str:
        token = self.sup.token_file.read_text().strip()
        result = CliRunner().invoke(app, ["mc", *args, "--server", self.sup.url,
                                          "--token", token])
        assert result.exit_code == 0, result.output
        return result.output


def clusters_file(home: Path, pool: Up, slurm: SlurmMemberCluster,
                  ray: RayMemberCluster) -> Path:
    slurm_token = home / "slurm.token"
    slurm_token.write_text(slurm.token + "\n")
    slurm_token.chmod(0o600)
    docs = [
        ("pool", pool.url, "shoal", f"{{tokenFile: '{pool.token_file}'}}"),
        ("slurm", slurm.uri, "slurm", f"{{tokenFile: slurm.token, user: {JOB_USER}}}"),
        ("ray", ray.uri, "ray", f"{{tokenEnv: {RAY_TOKEN_ENV}}}"),
    ]
    path = home / "clusters.yaml"
    path.write_text("---\n".join(textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {{name: {alias}}}
        spec: {{uri: '{uri}', kind: {kind}, priority: {PRIORITIES[alias]}, gpuType: fake,
                credentials: {creds}}}
        """) for alias, uri, kind, creds in docs))
    return path


@pytest.fixture(scope="module")
def world(engines: SharedEngines, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Engines]:
    slurm, ray = engines.slurm(), engines.ray()
    scratch = Scratch()
    ups: list[Up] = []
    try:
        home = tmp_path_factory.mktemp("pool")
        (home / "cluster.yaml").write_text(node_yaml())
        pool = Up(home, [], scratch)
        pool.start()
        ups.append(pool)
        home = tmp_path_factory.mktemp("super")
        (home / "cluster.yaml").write_text(node_yaml())
        registry = clusters_file(home, pool, slurm, ray)
        sup = Up(home, ["--clusters", str(registry), "--mc-poll", "0.2", "--mc-timeout", "10"],
                 scratch, env={RAY_TOKEN_ENV: ray.token})
        sup.start()
        ups.append(sup)
        yield Engines(pool, sup, slurm, ray)
    finally:
        for up in reversed(ups):
            up.stop()
        scratch.close()


@pytest.fixture(autouse=True)
def stops_its_jobs(world: Engines) -> Iterator[None]:
    yield
    world.stop_unfinished()


@contextmanager
def slurm_gpu_taken(world: Engines) -> Iterator[str]:
    """A job of Slurm's own (plain `sbatch`, not through Shoal) holding gpu1's one GPU."""
    blocker = world.slurm.slurm.sbatch("--gres=gpu:1", "--chdir=/tmp", "--output=/dev/null",
                                       "--job-name=e2e-gpu-holder", "--wrap", "sleep 600")
    try:
        until("the GPU holder runs", lambda: world.slurm_state(blocker) == "RUNNING")
        yield blocker
    finally:
        world.slurm.slurm.command("scancel", blocker)
        until("the GPU holder ended", lambda: blocker not in world.slurm.queue())


@contextmanager
def pool_full(world: Engines) -> Iterator[None]:
    """A job of the Shoal member's own holding both its GPUs."""
    blocker = job_yaml("e2e-pool-holder", queue=None, replicas=1, gpu=2, cpu="2", memory="64Mi",
                       command="[sleep, '600']")
    with world.pool.client() as c:
        c.submit(blocker)
    try:
        until("the pool holder runs",
              lambda: world.pool_state("e2e-pool-holder") == "Running")
        yield
    finally:
        with world.pool.client() as c:
            c.cancel("e2e-pool-holder")


def cancelled_on_members(world: Engines, name: str, aliases: tuple[str, ...]) -> None:
    """Each named copy ends cancelled on its own member, as the member itself says — or,
    where its cancel came before its submission (a member slow to take it) or it was never
    sent, the member holds no such job."""
    for alias in aliases:
        copy_name = f"{name}-{alias}"

        def ended(alias: str = alias, copy_name: str = copy_name) -> bool:
            copy = world.copy_or_none(name, alias)
            if copy is None:  # never sent: under FAC-priority, below a copy already running
                return not world.on_member(alias, copy_name)
            if copy.remote_id is None:
                return copy.state == "STOPPED" and not world.on_member(alias, copy_name)
            if alias == "pool":
                return world.pool_state(copy_name) == "Cancelled"
            if alias == "ray":
                return world.ray_state(copy_name) == "STOPPED"
            return (world.slurm_state(copy.remote_id) == "CANCELLED"
                    and copy.remote_id not in world.slurm.queue())

        until(f"{copy_name} cancelled on {alias}", ended)


def stop(world: Engines, name: str) -> McJobView:
    world.cli("stop", name)
    return until(f"{name} ended", lambda: (j := world.mc(name)).final and j)


def test_fac_priority_ends_on_slurm_and_the_others_are_cancelled_on_their_members(
        world: Engines) -> None:
    name = world.submit("e2e-prio", policy="fac-priority", gpu=1, scale="1s")
    done = until("e2e-prio kept", lambda: (j := world.mc(name)).kept and j)
    assert done.kept == "slurm", done
    kept = world.copy(name, "slurm")
    assert kept.remote_id is not None and kept.verdict == "kept"
    assert world.slurm_state(kept.remote_id) == "RUNNING"
    assert world.slurm.job_field(kept.remote_id, "NodeList") == "gpu1"
    assert kept.remote_id in world.slurm.queue()
    cancelled_on_members(world, name, ("pool", "ray"))
    for alias in ("pool", "ray"):
        assert world.copy(name, alias).verdict == "cancelled"

    said = world.cli("get", name)
    assert "kept slurm" in said and "cancelled" in said and kept.why
    logs = world.cli("logs", name)
    assert "slurmrestd serves no job output" in logs
    output = world.slurm.work / f"{name}-slurm-{kept.remote_id}.out"
    assert str(output) in logs
    # The member is this machine: the file the adapter names is the copy's own output.
    until("the copy's output written", lambda: "hello from e2e-prio" in output.read_text()
          if output.exists() else None)

    stop(world, name)
    until("slurm's copy cancelled on slurm",
          lambda: world.slurm_state(kept.remote_id or "") == "CANCELLED")


def test_with_slurms_gpu_taken_the_job_ends_on_pool_and_slurms_copy_is_cancelled(
        world: Engines) -> None:
    with slurm_gpu_taken(world) as holder:
        name = world.submit("e2e-busy", policy="fac-priority", gpu=1, scale="0.05s")
        done = until("e2e-busy kept", lambda: (j := world.mc(name)).kept and j)
        assert done.kept == "pool", done
        assert world.pool_state("e2e-busy-pool") == "Running"
        cancelled_on_members(world, name, ("slurm", "ray"))
        slurm_copy = world.copy(name, "slurm")
        assert slurm_copy.remote_id is not None
        assert slurm_copy.verdict == "cancelled" and "window" in slurm_copy.why
        assert world.slurm.job_field(slurm_copy.remote_id, "RunTime") == "00:00:00"
        assert world.slurm_state(holder) == "RUNNING"  # Slurm's own job is left alone
        stop(world, name)
        until("pool's copy cancelled on pool",
              lambda: world.pool_state("e2e-busy-pool") == "Cancelled")


def test_fac_with_the_others_full_ends_on_ray_and_its_log_is_read_through_the_super(
        world: Engines) -> None:
    with slurm_gpu_taken(world), pool_full(world):
        name = world.submit("e2e-fac", policy="fac", gpu=1, guard="2s")
        done = until("e2e-fac kept", lambda: (j := world.mc(name)).kept and j)
        assert done.kept == "ray", done
        assert world.ray_state("e2e-fac-ray") == "RUNNING"
        cancelled_on_members(world, name, ("pool", "slurm"))
        logs = until("ray's log through the super scheduler",
                     lambda: (said := world.cli("logs", name)) and
                     "hello from e2e-fac" in said and said)
        assert "slurmrestd" not in logs
        with world.sup.client() as c:
            assert "hello from e2e-fac" in c.multicluster_logs(name)
        stop(world, name)
        until("ray's copy stopped on ray", lambda: world.ray_state("e2e-fac-ray") == "STOPPED")


def test_a_stop_through_the_super_cancels_the_copies_on_all_three_engines(
        world: Engines) -> None:
    # No GPU: every member runs its copy; the guard window outlasts the test, so none wins.
    name = world.submit("e2e-stop", policy="fac", gpu=0, guard="1h")
    until("every copy runs on its member", lambda: all(
        world.copy_state(name, a) == "RUNNING" for a in PRIORITIES))
    slurm_id = world.copy(name, "slurm").remote_id
    assert slurm_id is not None and slurm_id in world.slurm.queue()
    assert world.slurm_state(slurm_id) == "RUNNING"
    assert world.pool_state("e2e-stop-pool") == "Running"
    assert world.ray_state("e2e-stop-ray") == "RUNNING"
    assert world.mc(name).kept is None

    done = stop(world, name)
    assert done.state == "STOPPED", done
    assert world.pool_state("e2e-stop-pool") == "Cancelled"
    assert world.ray_state("e2e-stop-ray") == "STOPPED"
    assert world.slurm_state(slurm_id) == "CANCELLED"
    assert slurm_id not in world.slurm.queue()


def test_no_member_token_in_the_super_schedulers_answers_or_log(world: Engines) -> None:
    tokens = [world.pool.token_file.read_text().strip(), world.slurm.token, world.ray.token]
    with world.sup.client() as c:
        texts = [str([m.raw for m in c.member_clusters()]),
                 str([j.raw for j in c.multicluster_jobs()])]
    said = world.cli("clusters")
    log = world.sup.log()
    db = (world.sup.home / ".shoal" / "shoal.db").read_bytes()
    for token in tokens:
        assert all(token not in t for t in (*texts, said, log))
        assert token.encode() not in db
