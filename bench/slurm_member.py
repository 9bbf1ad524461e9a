"""What the `slurm` member adapter costs against Slurm's own CLI: the same copies, each a
one-line batch job, submitted and followed to COMPLETED once through `SlurmMember`
(slurmrestd, JWT) and once through `sbatch` + `scontrol show job` (what a super scheduler
inside the cluster's munge realm would run), on one local Slurm (bench/slurm_local.py, two
nodes, slurmrestd) started here.

Prints one JSON object per path with wall seconds, the CPU seconds of this process and of
the commands it started (the CLI path) — not of the Slurm daemons, which serve both paths —
and the calls made, then the same-run ratio adapter / CLI.

    .venv/bin/python bench/slurm_member.py [--copies 20]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy

import slurm_local

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.federation.members.contract import MemberCredentials
from shoal.federation.members.slurm import SlurmMember

POLL_S = 0.1
DEADLINE_S = 300.0
USER = "nobody"


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Run:
    path: str
    copies: int
    calls: int
    wall_s: float
    process_cpu_s: float


def _measure(path: str, copies: int, submit: Callable[[str], str],
             done: Callable[[str], bool]) -> Run:
    calls = 0
    start_wall, start_cpu = time.perf_counter(), _cpu_s()
    pending = {submit(f"bench-{path}-{i}") for i in range(copies)}
    calls += copies
    deadline = time.monotonic() + DEADLINE_S
    while pending and time.monotonic() < deadline:
        for job_id in sorted(pending):
            calls += 1
            if done(job_id):
                pending.discard(job_id)
        if pending:
            time.sleep(POLL_S)
    if pending:
        raise SystemExit(f"{path}: {len(pending)} copies not done in {DEADLINE_S} s")
    return Run(path, copies, calls, round(time.perf_counter() - start_wall, 3),
               round(_cpu_s() - start_cpu, 3))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    args = parser.parse_args(argv)
    if not slurm_local.install(rest=True):
        raise SystemExit("needs Debian's Slurm with slurmrestd and its JWT plugin (root)")
    root = Path(tempfile.mkdtemp(prefix="shoal-bench-slurm-member-", dir="/tmp"))
    root.chmod(0o755)
    work = root / "work"
    work.mkdir()
    work.chmod(0o1777)
    nodes = (slurm_local.SlurmNode("b1", 8, memory_mb=8192),
             slurm_local.SlurmNode("b2", 8, memory_mb=8192))
    try:
        with slurm_local.local_slurm(root / "slurm", nodes=nodes, rest=True) as slurm:
            member = SlurmMember(
                MemberCluster("bench", f"{slurm.rest_url}?workdir={work}", ClusterKind.SLURM),
                MemberCredentials(USER, slurm.token(USER)), timeout_s=30)
            role = (RoleRequest("main", 1, ("true",), memory_mib=16),)

            def adapter_submit(name: str) -> str:
                return member.submit(CopyRequest("bench", "bench", name, role, "{}", "shoal"))

            def adapter_done(job_id: str) -> bool:
                return member.status(job_id).state is CopyState.SUCCEEDED

            def cli_submit(name: str) -> str:
                return slurm.sbatch("-J", name, f"--uid={USER}", "--mem=16", f"-D{work}",
                                    f"-o{work}/%x-%j.out", "--wrap", "true")

            def cli_done(job_id: str) -> bool:
                said = slurm.command("scontrol", "-o", "show", "job", job_id)
                return " JobState=COMPLETED " in said

            adapter = _measure("slurmrestd-adapter", args.copies, adapter_submit, adapter_done)
            cli = _measure("sbatch-cli", args.copies, cli_submit, cli_done)
            member.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for run in (adapter, cli):
        print(json.dumps(asdict(run)))
    print(json.dumps({"ratio": "slurmrestd-adapter / sbatch-cli",
                      "wall": round(adapter.wall_s / cli.wall_s, 3),
                      "process_cpu": round(adapter.process_cpu_s
                                           / max(cli.process_cpu_s, 1e-9), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
