"""Benchmark: the durable dispatcher's cost per pass (issue 19), against the pure policy
alone on the same jobs.

`--jobs` multi-cluster jobs over `--members` in-memory members (no network: what is
measured is the dispatcher's own work — reading the store, storing each decision before it
is acted on, the members' lanes) are driven to a steady state (every job RUNNING on its kept
member, its other copies cancelled); then `--passes` passes of `Dispatcher.step` are timed,
and, as the baseline of the same run, `decide` over the same jobs' observations. Prints one
JSON object: wall and process CPU seconds per pass of each, and the ratio.

    uv run python bench/mc_dispatcher.py [--jobs 200] [--members 3] [--passes 5] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import textwrap
import time
from pathlib import Path

from shoal.api.federation import CopyRequest, CopyState, MemberCluster
from shoal.federation.dispatch import decide
from shoal.federation.dispatch_types import DispatchRules
from shoal.federation.dispatcher import Dispatcher, observation_of
from shoal.federation.intake import members_of, take_in
from shoal.federation.lanes import MemberLanes
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberAdapter,
    MemberCredentials,
    RemoteStatus,
)
from shoal.federation.registry import ClusterRegistry, load_registry
from shoal.store.engine import open_store
from shoal.store.federation import FederationRecords, NewMcJob
from shoal.store.federation_secrets import key_box


class InstantMember:
    """A member that runs every copy at once (in memory): the benches measure the
    dispatcher, not a member."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.copies: dict[str, CopyState] = {}

    def submit(self, request: CopyRequest) -> str:
        self.copies[request.name] = CopyState.RUNNING
        return request.name

    def status(self, remote_id: str) -> RemoteStatus:
        state = self.copies[remote_id]
        return RemoteStatus(state, state.value)

    def cancel(self, remote_id: str) -> None:
        self.copies[remote_id] = CopyState.STOPPED

    def find(self, name: str) -> str | None:
        return name if name in self.copies else None

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        return ""


def member_registry(aliases: list[str]) -> ClusterRegistry:
    """Members `aliases` from a clusters file, of priorities 10, 20, …"""
    return load_registry("---\n".join(textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {{name: {a}}}
        spec: {{uri: 'http://{a}.example', kind: shoal, priority: {10 * (i + 1)}}}
        """) for i, a in enumerate(aliases)))


def add_jobs(records: FederationRecords, registry: ClusterRegistry, aliases: list[str],
             jobs: int, now: float) -> tuple[MemberCluster, ...]:
    """Store `jobs` one-task FAC-priority jobs over every member; their members."""
    clusters = ", ".join(f"{a}: {{uri: 'http://{a}.example'}}" for a in aliases)
    member_list: tuple[MemberCluster, ...] = ()
    for n in range(jobs):
        intake = take_in(textwrap.dedent(f"""\
            apiVersion: shoal/v1
            kind: MultiClusterJob
            metadata: {{name: job-{n}}}
            spec:
              clusters: {{{clusters}}}
              policy: fac-priority
              guardTimeRunning: 1s
              timeScale: 0s
              template:
                taskGroups:
                  - {{name: w, replicas: 1, resources: {{cpu: 1}}, command: [run]}}
            """), registry)
        member_list = members_of(intake.job, registry)
        records.create_job(NewMcJob(intake.job.name, "bench", intake.document,
                                    intake.job.policy, 1.0, 0.0, 0, None, now))
    return member_list


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--db", default=None, help="store URL (default: SQLite in a temp dir)")
    args = parser.parse_args(argv)
    aliases = [f"m{i}" for i in range(args.members)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = open_store(args.db or f"sqlite:///{root / 'bench.db'}")
        store.migrate()
        registry = member_registry(aliases)
        members = {a: InstantMember(a) for a in aliases}

        def adapters(member: MemberCluster, _creds: MemberCredentials) -> MemberAdapter:
            return members[member.alias]

        clock = [1000.0]
        records = FederationRecords(store)
        box = key_box(root)
        dispatcher = Dispatcher(records, registry, box, lambda: clock[0], adapters=adapters,
                                settle_s=60.0, lanes=MemberLanes(lambda: clock[0]))
        member_list = add_jobs(records, registry, aliases, args.jobs, clock[0])
        for _ in range(4):  # submit, observe RUNNING, keep after the guard, cancel the rest
            dispatcher.step(clock[0])
            clock[0] += 1.0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.passes):
            dispatcher.step(clock[0])
            clock[0] += 1.0
        step_wall = (time.perf_counter() - wall0) / args.passes
        step_cpu = (time.process_time() - cpu0) / args.passes
        jobs = records.active_jobs()
        kept = sum(1 for j in jobs if j.kept is not None)
        inputs = []
        for job in jobs:
            inputs.append((DispatchRules(job.policy, job.guard_time_s, job.time_scale_s,
                                         job.retries),
                           [observation_of(c, job.submitted) for c in job.copies],
                           job.submitted))
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.passes):
            for rules, observations, origin in inputs:
                decide(member_list, rules, observations, clock[0] - origin)
        decide_wall = (time.perf_counter() - wall0) / args.passes
        decide_cpu = (time.process_time() - cpu0) / args.passes
        dispatcher.close()
        store.close()
    print(json.dumps({
        "jobs": args.jobs, "members": args.members, "passes": args.passes,
        "jobs_kept": kept,
        "step_wall_s": round(step_wall, 4), "step_cpu_s": round(step_cpu, 4),
        "decide_only_wall_s": round(decide_wall, 4), "decide_only_cpu_s": round(decide_cpu, 4),
        "step_cpu_ratio_to_decide": round(step_cpu / decide_cpu, 1) if decide_cpu else None,
        "step_ms_per_job": round(1000 * step_wall / args.jobs, 3),
    }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
