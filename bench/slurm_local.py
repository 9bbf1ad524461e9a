"""A one-machine Slurm for the benchmarks: Debian's slurm-wlm (22.05), installed if missing
(`apt-get install`), with munged, slurmctld and slurmd started here over a private
directory and stopped after (`/work/shared/reference/engines-on-one-machine.md` is how).

`local_slurm(workdir, cpus)` yields a `Slurm`: its one node `local` declares `cpus` CPUs
(`SlurmdParameters=config_overrides`: more than the machine has, as Shoal's benchmark node
does), one partition, no accounting; `sbatch` runs through it and `daemons` are its
processes, whose CPU time the benchmark reads. Default scheduling parameters: Slurm as a
site gets it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

PACKAGES = ("slurm-wlm", "slurmctld", "slurmd", "slurm-client", "munge")
#: How long the daemons may take to bring the node up (a safety net).
READY_TIMEOUT = 60.0

CONF = """\
ClusterName=shoalbench
SlurmctldHost={host}
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
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
NodeName=local NodeHostname={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName=bench Nodes=local Default=YES MaxTime=INFINITE State=UP
"""


@dataclass(frozen=True)
class Slurm:
    """A running one-node Slurm: `env` has its SLURM_CONF."""

    conf: Path
    daemons: tuple[psutil.Process, ...]

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


def available() -> bool:
    return shutil.which("sbatch") is not None and shutil.which("slurmctld") is not None


def install() -> bool:
    """Install Debian's Slurm if it is missing; whether it is there now."""
    if available():
        return True
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                     *PACKAGES]):
        if subprocess.run(command, env=env, capture_output=True, check=False).returncode:
            return False
    return available()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _munged() -> Iterator[None]:
    """munged running (started here, and stopped after, unless one ran already)."""
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True,
                      check=False).returncode == 0:
        yield
        return
    run = Path("/run/munge")
    run.mkdir(parents=True, exist_ok=True)
    shutil.chown(run, "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
    try:
        yield
    finally:
        pid_file = run / "munged.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), 15)


@contextmanager
def local_slurm(workdir: Path, cpus: int) -> Iterator[Slurm]:
    """slurmctld and slurmd over `workdir` until the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool"):
        (workdir / sub).mkdir(exist_ok=True)
    conf = workdir / "slurm.conf"
    conf.write_text(CONF.format(host=socket.gethostname(), ctld_port=_free_port(),
                                d_port=_free_port(), dir=workdir, cpus=cpus,
                                memory=cpus * 64))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    with _munged():
        processes = [subprocess.Popen([daemon, "-D"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
                     for daemon in ("slurmctld", "slurmd")]
        try:
            slurm = Slurm(conf, tuple(psutil.Process(p.pid) for p in processes))
            _wait_idle(slurm, processes)
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
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], env=slurm.env,
                               capture_output=True, text=True, check=False).stdout.strip()
        if state == "idle":
            return
        time.sleep(0.2)
    logs = {name: (slurm.conf.parent / f"{name}.log") for name in ("slurmctld", "slurmd")}
    tails = {name: path.read_text()[-1500:] if path.exists() else ""
             for name, path in logs.items()}
    raise SystemExit(f"Slurm did not come up within {READY_TIMEOUT} s: {tails}")
