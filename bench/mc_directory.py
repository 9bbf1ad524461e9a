"""Benchmark: what reading the registry from the store at every dispatcher pass costs
(issue 19: members declared through the API take effect at the next pass, no restart).

The same `--jobs` multi-cluster jobs over `--members` in-memory members are driven to a
steady state twice in one run: once with the members declared in a clusters file (the
registry fixed: the baseline), once with the same members declared through the API (the
registry read from `mc_clusters` at every pass, `shoal.federation.directory`). Then
`--passes` passes of `Dispatcher.step` are timed on each, and `MemberDirectory.current()`
alone with `--declared` members in the table. Prints one JSON object: wall and process CPU
seconds of each, and the ratio of the API-declared pass to the file pass.

    uv run python bench/mc_directory.py [--jobs 200] [--members 3] [--passes 5]
                                        [--declared 256]

Each run has its own SQLite store in a temp dir (the two runs hold the same job names).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from shoal.api.federation import ClusterKind, MemberCluster
from shoal.federation.directory import MemberDirectory, seal_token
from shoal.federation.dispatcher import Dispatcher
from shoal.federation.lanes import MemberLanes
from shoal.federation.members.contract import (
    MemberAdapter,
    MemberCredentials,
)
from shoal.federation.registry import ClusterRegistry
from shoal.store.engine import Store, open_store
from shoal.store.federation import FederationRecords
from shoal.store.federation_members import DeclaredMember, MemberRecords
from shoal.store.federation_secrets import SecretBox, key_box

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from mc_dispatcher import InstantMember, add_jobs, member_registry


def _declare(records: MemberRecords, box: SecretBox, alias: str, priority: int) -> None:
    records.add_member(DeclaredMember(
        alias=alias, uri=f"http://{alias}.example", kind=ClusterKind.SHOAL, gpu_type=None,
        priority=priority, user=None, sealed_token=seal_token(box, f"token-{alias}"),
        created=float(priority), updated=float(priority), updated_by="bench"))


class _Run:
    """One dispatcher at steady state over its own store."""

    def __init__(self, store: Store, box: SecretBox, aliases: list[str], jobs: int,
                 declared: bool) -> None:
        directory = None
        if declared:
            records = MemberRecords(store)
            for i, alias in enumerate(aliases):
                _declare(records, box, alias, 10 * (i + 1))
            directory = MemberDirectory(ClusterRegistry(()), records, box)
            registry = directory.current()
        else:
            registry = member_registry(aliases)
        members = {a: InstantMember(a) for a in aliases}

        def adapters(member: MemberCluster, _creds: MemberCredentials) -> MemberAdapter:
            return members[member.alias]

        self.clock = [1000.0]
        self.jobs = FederationRecords(store)
        self.dispatcher = Dispatcher(
            self.jobs, registry, box, lambda: self.clock[0], adapters=adapters, settle_s=60.0,
            lanes=MemberLanes(lambda: self.clock[0]),
            directory=None if directory is None else directory.current)
        self.wall = self.cpu = 0.0
        add_jobs(self.jobs, registry, aliases, jobs, self.clock[0])
        for _ in range(4):  # submit, observe RUNNING, keep after the guard, cancel the rest
            self.step()

    def step(self) -> None:
        self.dispatcher.step(self.clock[0])
        self.clock[0] += 1.0

    def timed_step(self) -> None:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        self.step()
        self.wall += time.perf_counter() - wall0
        self.cpu += time.process_time() - cpu0

    def kept(self) -> int:
        return sum(1 for j in self.jobs.active_jobs() if j.kept is not None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--declared", type=int, default=256,
                        help="members in the table when `current()` alone is timed")
    args = parser.parse_args(argv)
    aliases = [f"m{i}" for i in range(args.members)]
    result: dict[str, object] = {"jobs": args.jobs, "members": args.members,
                                 "passes": args.passes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = key_box(root)
        runs: dict[str, _Run] = {}
        stores = []
        for label, declared in (("file", False), ("api", True)):
            store = open_store(f"sqlite:///{root / label}.db")
            store.migrate()
            stores.append(store)
            runs[label] = _Run(store, box, aliases, args.jobs, declared)
        # Interleaved, pass by pass: whichever ran second would pay for the first's garbage.
        for _ in range(args.passes):
            for run in runs.values():
                run.timed_step()
        for label, run in runs.items():
            result |= {f"{label}_step_wall_s": round(run.wall / args.passes, 4),
                       f"{label}_step_cpu_s": round(run.cpu / args.passes, 4),
                       f"{label}_jobs_kept": run.kept()}
            run.dispatcher.close()
        for store in stores:
            store.close()
        store = open_store(f"sqlite:///{root / 'many.db'}")
        store.migrate()
        records = MemberRecords(store)
        for i in range(args.declared):
            _declare(records, box, f"d{i}", i % 101)
        directory = MemberDirectory(ClusterRegistry(()), records, box)
        calls = 20
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            directory.current()
        result |= {"declared": args.declared,
                   "current_wall_ms": round(1000 * (time.perf_counter() - wall0) / calls, 3),
                   "current_cpu_ms": round(1000 * (time.process_time() - cpu0) / calls, 3)}
        store.close()
    file_cpu, api_cpu = result["file_step_cpu_s"], result["api_step_cpu_s"]
    assert isinstance(file_cpu, float) and isinstance(api_cpu, float)
    result["api_step_cpu_ratio_to_file"] = round(api_cpu / file_cpu, 2) if file_cpu else None
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
