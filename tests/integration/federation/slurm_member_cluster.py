"""A real Slurm member cluster for the `slurm` adapter's tests: bench/slurm_local.py's
starter (the one home of it, loaded by path) with two fake nodes — `cpu1` without GPUs,
`gpu1` with one fake GPU as GRES — and slurmrestd with JWT authentication.

`controller_down(cluster)` puts a second slurmrestd in front of no slurmctld (a copy of
slurm.conf whose `SlurmctldPort` nobody listens on): what a member whose controller died looks
like, without stopping the slurmctld the other tests share.

Jobs run as `nobody` (slurmctld refuses tokens for root) in `work`, a directory every user
may write, which the adapter is pointed at by its URI (`?workdir=`).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

STARTER = Path(__file__).resolve().parents[3] / "bench" / "slurm_local.py"
JOB_USER = "nobody"


def slurm_local() -> ModuleType:
    """bench/slurm_local.py as a module (bench/ is a folder of scripts, not a package)."""
    module = sys.modules.get("slurm_local")
    if module is None:
        spec = importlib.util.spec_from_file_location("slurm_local", STARTER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["slurm_local"] = module
        spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class SlurmMemberCluster:
    slurm: Any
    """slurm_local.Slurm: `command(...)` runs squeue/scontrol on the member itself."""
    work: Path
    token: str

    @property
    def uri(self) -> str:
        return f"{self.slurm.rest_url}?workdir={self.work}"

    def job_field(self, job_id: str, key: str) -> str:
        """One `Key=Value` of `scontrol show job`, as the member itself says it."""
        said = self.slurm.command("scontrol", "-o", "show", "job", job_id)
        for word in said.split():
            name, _, value = word.partition("=")
            if name == key:
                return value
        raise AssertionError(f"no {key} in `scontrol show job {job_id}`: {said[:300]}")

    def queue(self) -> list[str]:
        """The job ids `squeue` lists (pending or running)."""
        return self.slurm.command("squeue", "-h", "-o", "%i").split()


@contextmanager
def slurm_member_cluster() -> Iterator[SlurmMemberCluster]:
    starter = slurm_local()
    if not starter.install(rest=True):
        raise AssertionError("Slurm with slurmrestd and its JWT plugin is not installed and "
                             "cannot be (not root, or no apt-get): `make test` installs it")
    # slurmrestd runs as `slurm` and reads slurm.conf; jobs run as `nobody`.
    root = Path(tempfile.mkdtemp(prefix="shoal-slurm-member-", dir="/tmp"))
    root.chmod(0o755)
    work = root / "work"
    work.mkdir()
    work.chmod(0o1777)
    nodes = (starter.SlurmNode("cpu1", 2, memory_mb=4096),
             starter.SlurmNode("gpu1", 2, gpus=1, memory_mb=4096))
    try:
        with starter.local_slurm(root / "slurm", nodes=nodes, rest=True) as slurm:
            yield SlurmMemberCluster(slurm, work, slurm.token(JOB_USER))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def controller_down(cluster: SlurmMemberCluster) -> Iterator[str]:
    """The URL of a slurmrestd whose slurmctld does not answer (it reaches none)."""
    starter = slurm_local()
    conf = cluster.slurm.conf
    dead = conf.with_name("slurm-no-controller.conf")
    # MessageTimeout: slurmrestd gives up on the absent controller in seconds, not tens.
    dead.write_text(re.sub(r"(?m)^SlurmctldPort=\d+$",
                           f"SlurmctldPort={starter._free_port()}", conf.read_text())
                    + "MessageTimeout=2\n")
    dead.chmod(0o644)
    port = starter._free_port()
    log = conf.with_name("slurmrestd-no-controller.log")
    server = subprocess.Popen(
        ["slurmrestd", "-u", "slurm", "-g", "slurm", "-a", "rest_auth/jwt", "-s",
         starter.REST_PLUGIN, f"127.0.0.1:{port}"],
        env={**cluster.slurm.env, "SLURM_CONF": str(dead), "SLURM_JWT": "daemon"},
        stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        starter._wait_listening(port, server, log)
        yield f"http://127.0.0.1:{port}?workdir={cluster.work}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
