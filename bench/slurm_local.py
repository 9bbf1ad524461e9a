"""A one-machine Slurm for the benchmarks and for the tests of the `slurm` member cluster:
Debian's slurm-wlm (22.05), installed if missing (`apt-get install`), with munged,
slurmctld and one slurmd per node started here over a private directory and stopped after
(`/work/shared/reference/engines-on-one-machine.md` is how).

`local_slurm(workdir, cpus)` yields a `Slurm`: its one node `local` declares `cpus` CPUs
(`SlurmdParameters=config_overrides`: more than the machine has, as Shoal's benchmark node
does), one partition, no accounting; `sbatch` runs through it and `daemons` are its
processes, whose CPU time the benchmark reads. Default scheduling parameters: Slurm as a
site gets it.

`nodes=` declares several fake nodes instead (each its own slurmd on its own port, some
with fake GPUs as GRES), and `rest=True` adds slurmrestd with JWT authentication
(`rest_auth/jwt`, run as the `slurm` user as it insists), whose URL is `Slurm.rest_url`;
`Slurm.token(user)` is a JWT from `scontrol token`. The tests import this module by path
(tests/integration/federation/slurm_member_cluster.py), so there is one starter.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

PACKAGES = ("slurm-wlm", "slurmctld", "slurmd", "slurm-client", "munge", "slurmrestd",
            "slurm-wlm-jwt-plugin")
#: How long the daemons may take to bring the nodes up (a safety net).
READY_TIMEOUT = 60.0
#: The slurmrestd OpenAPI plugin Debian's Slurm 22.05 serves last.
REST_PLUGIN = "openapi/v0.0.38"

CONF = """\
ClusterName=shoalbench
SlurmctldHost={host}
SlurmUser=root
SlurmctldPort={ctld_port}
AuthType=auth/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool/%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
DefMemPerCPU=16
MaxJobCount=100000
{extra}{node_lines}
PartitionName=bench Nodes={node_names} Default=YES MaxTime=INFINITE State=UP
"""

#: What slurmctld needs to take the JWTs slurmrestd passes on (the key is made per start).
JWT_CONF = "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={dir}/jwt.key\n"


@dataclass(frozen=True)
class SlurmNode:
    """One fake node: its name, CPUs, fake GPUs and memory. The GPUs are GRES `gpu` over
    spare consoles (/dev/tty10...): slurmd counts a GPU only by a device file, and binds
    them as it would real ones (`CUDA_VISIBLE_DEVICES`)."""

    name: str
    cpus: int
    gpus: int = 0
    memory_mb: int | None = None

    def line(self, host: str, port: int) -> str:
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        memory = self.memory_mb if self.memory_mb is not None else self.cpus * 64
        return (f"NodeName={self.name} NodeHostname={host} Port={port} CPUs={self.cpus} "
                f"RealMemory={memory}{gres} State=UNKNOWN")


@dataclass(frozen=True)
class Slurm:
    """A running Slurm: `env` has its SLURM_CONF; `rest_url` is slurmrestd's, when started."""

    conf: Path
    daemons: tuple[psutil.Process, ...]
    nodes: tuple[SlurmNode, ...] = ()
    rest_url: str | None = None
    rest: psutil.Process | None = None

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def sbatch(self, *args: str) -> str:
        """Submit a job; its id."""
        done = subprocess.run(["sbatch", "--parsable", *args], env=self.env, check=True,
                              capture_output=True, text=True)
        return done.stdout.strip().split(";")[0]

    def queued(self) -> int:
        """How many jobs Slurm still has pending or running."""
        done = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, check=True,
                              capture_output=True, text=True)
        return len(done.stdout.split())

    def command(self, *args: str) -> str:
        """A Slurm client command (`squeue`, `scontrol` ...) against this cluster; its output."""
        return subprocess.run(list(args), env=self.env, check=True, capture_output=True,
                              text=True).stdout

    def token(self, user: str, lifespan_s: int = 3600) -> str:
        """A JWT for `user`, as `scontrol token` makes it (slurmrestd then acts as `user`)."""
        said = self.command("scontrol", "token", f"username={user}", f"lifespan={lifespan_s}")
        return said.strip().removeprefix("SLURM_JWT=")


def available(rest: bool = False) -> bool:
    daemons = ("sbatch", "slurmctld", *(("slurmrestd",) if rest else ()))
    return all(shutil.which(name) is not None for name in daemons) and (
        not rest or any(Path(d, "rest_auth_jwt.so").exists() for d in _plugin_dirs()))


def _plugin_dirs() -> tuple[str, ...]:
    return ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
            "/usr/lib/slurm-wlm", "/usr/lib64/slurm")


def install(rest: bool = False) -> bool:
    """Install Debian's Slurm (with slurmrestd and its JWT plugin) if it is missing; whether
    it is there now."""
    if available(rest):
        return True
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                     *PACKAGES]):
        if subprocess.run(command, env=env, capture_output=True, check=False).returncode:
            return False
    return available(rest)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _munged() -> Iterator[None]:
    """munged serving (started here unless one serves already). One that is still exiting
    (another run stopping its own) is waited out, not trusted; ours is stopped after only
    when no other Slurm daemon on the machine is left to need it (tests and benchmarks of
    several checkouts may share one machine, and munged is the machine's)."""
    if _munge_answers():
        yield
        return
    deadline = time.monotonic() + READY_TIMEOUT
    while _running("munged") and time.monotonic() < deadline:
        time.sleep(0.1)  # an exiting munged still holds its socket and pid file
    run = Path("/run/munge")
    run.mkdir(parents=True, exist_ok=True)
    shutil.chown(run, "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"],
                   check=True)
    try:
        yield
    finally:
        if not _running("slurmctld") and not _running("slurmd"):
            pid_file = run / "munged.pid"
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text().strip()), 15)


def _munge_answers() -> bool:
    """Whether a munged serves its socket (`munge -n` encodes a credential through it)."""
    return subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode == 0


def _running(name: str) -> bool:
    return subprocess.run(["pgrep", "-x", name], capture_output=True,
                          check=False).returncode == 0


@contextmanager
def local_slurm(workdir: Path, cpus: int = 1, *, nodes: Sequence[SlurmNode] = (),
                rest: bool = False) -> Iterator[Slurm]:
    """slurmctld and a slurmd per node over `workdir` (plus slurmrestd when `rest`) until the
    block ends. Without `nodes`, one node `local` of `cpus` CPUs. With `rest`, `workdir` must
    be readable by the `slurm` user, whom slurmrestd runs as."""
    wanted = tuple(nodes) or (SlurmNode("local", cpus, memory_mb=cpus * 64),)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "state").mkdir(exist_ok=True)
    for node in wanted:
        (workdir / "spool" / node.name).mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    extra = ""
    if rest:
        key = workdir / "jwt.key"
        key.write_bytes(os.urandom(32))
        key.chmod(0o600)
        extra = JWT_CONF.format(dir=workdir)
    if any(node.gpus for node in wanted):
        extra += "GresTypes=gpu\n"
        (workdir / "gres.conf").write_text("".join(
            f"NodeName={node.name} Name=gpu File=/dev/tty[10-{9 + node.gpus}]\n"
            for node in wanted if node.gpus))
    conf = workdir / "slurm.conf"
    conf.write_text(CONF.format(
        host=host, ctld_port=_free_port(), dir=workdir, extra=extra,
        node_lines="\n".join(node.line(host, _free_port()) for node in wanted),
        node_names=",".join(node.name for node in wanted)))
    conf.chmod(0o644)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    with _munged():
        processes = [subprocess.Popen(["slurmctld", "-D"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)]
        processes += [subprocess.Popen(["slurmd", "-D", "-N", node.name], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for node in wanted]
        try:
            slurm = Slurm(conf, tuple(psutil.Process(p.pid) for p in processes), wanted)
            _wait_idle(slurm, processes)
            if rest:
                port = _free_port()
                # slurmrestd refuses to run as root; SLURM_JWT=daemon lets it load its own
                # configuration without a token of its own (each request brings one).
                server = subprocess.Popen(
                    ["slurmrestd", "-u", "slurm", "-g", "slurm", "-a", "rest_auth/jwt",
                     "-s", REST_PLUGIN, f"127.0.0.1:{port}"],
                    env={**env, "SLURM_JWT": "daemon"}, stdout=subprocess.DEVNULL,
                    stderr=(workdir / "slurmrestd.log").open("wb"))
                processes.append(server)
                slurm = replace(slurm, rest_url=f"http://127.0.0.1:{port}",
                                rest=psutil.Process(server.pid))
                _wait_listening(port, server, workdir / "slurmrestd.log")
            yield slurm
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_idle(slurm: Slurm, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes):
            break
        states = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=slurm.env,
                                capture_output=True, text=True, check=False).stdout.split()
        if len(states) == len(slurm.nodes) and all(state == "idle" for state in states):
            return
        time.sleep(0.2)
    logs = sorted(slurm.conf.parent.glob("*.log"))
    tails = {path.name: path.read_text()[-1500:] for path in logs}
    raise SystemExit(f"Slurm did not come up within {READY_TIMEOUT} s: {tails}")


def _wait_listening(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and server.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"slurmrestd did not listen on {port} within {READY_TIMEOUT} s: "
                     f"{log.read_text()[-1500:] if log.exists() else ''}")
