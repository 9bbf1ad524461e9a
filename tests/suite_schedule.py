"""How the whole suite shares the machine's cores (pytest-xdist: `-n auto --dist loadfile
--no-loadscope-reorder` in pyproject's addopts): how many workers, which tests must run in
one worker, and in what order the workers take them.

- Workers: one per core, at most `MAX_WORKERS` (`PYTEST_XDIST_AUTO_NUM_WORKERS` overrides).
  Every worker starts its own session fixtures (a PostgreSQL server, migrated templates),
  and the heavy modules start Ray clusters, Slurm and `shoal up` processes: past a few
  workers they only wait on each other.
- Groups (`ModuleGroups`): a module's tests run in one worker, one after another, so that a
  module-scoped cluster (`ray_support.RayNodes`, a module's `shoal up`) starts once, not
  once per worker; the federation folder is one group, as its modules share one Slurm and
  one Ray head (`integration/federation/conftest.py`).
- Order: xdist hands the groups out in collection order (`--no-loadscope-reorder`) to
  whichever worker is free, so the longest groups go first (`SLOWEST`, measured on CI) and
  the many short ones fill in at the end: the workers then finish within a short test of
  each other instead of one running a two-minute module alone at the end.
"""

from __future__ import annotations

import os

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

MAX_WORKERS = 4

#: Folders whose modules share fixtures held outside pytest's scopes: one group each.
SHARED_FOLDERS = ("integration/federation",)

#: The longest groups, longest first: seconds of one worker, measured under xdist on the
#: 2-core CI machine while it ran other work too (load average 10-20: the torchrun module took
#: 679 s there, 209 s in a single-process CI run). Only their order matters: every other group
#: keeps its collection order after these.
SLOWEST: tuple[str, ...] = (
    "integration/federation",  # 919 s, 61 tests
    "e2e/test_elastic_torchrun.py",  # 679 s, 2 tests
    "executors/test_executor_contract.py",  # 461 s
    "e2e/test_bench_api.py",  # 306 s
    "server/test_openapi_fuzz.py",  # 270 s
    "property/test_queue_semantics_together.py",  # 264 s
    "control/test_control_live_nodes.py",  # 238 s
    "e2e/test_shoal_up.py",  # 214 s
    "executors/test_batched_contract.py",  # 163 s
    "executors/test_ray_inventory.py",  # 92 s
    "property/test_launch_chaos.py",  # 83 s
    "executors/test_ray_logs.py",  # 74 s
    "cli/test_bench_cli.py",  # 73 s
    "e2e/test_ray_engine.py",  # 61 s
    "e2e/test_usage_live.py",  # 59 s
    "server/test_server_logs.py",  # 46 s
    "property/test_admission.py",  # 30 s
    "property/test_incremental.py",
    "property/test_cycle_skip.py",
    "property/test_reason_report.py",
    "property/test_gang_restart_chaos.py",
)


def group_of(nodeid: str) -> str:
    """The group of the test `nodeid` (`tests/<path>.py::<name>`): its shared folder, or
    its module."""
    module = nodeid.split("::", 1)[0]
    for folder in SHARED_FOLDERS:
        if module.startswith(f"tests/{folder}/"):
            return folder
    return module.removeprefix("tests/")


class ModuleGroups(LoadFileScheduling):
    """`--dist loadfile` (a module's tests in one worker, in their order), with each shared
    folder one unit as well."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadFileScheduling | None:
    # Before xdist's own (which would answer loadfile's plain scheduler); any other --dist
    # given on the command line is xdist's as usual.
    if config.getvalue("dist") == "loadfile":
        return ModuleGroups(config, log)
    return None


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    wanted = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if wanted:
        return int(wanted)
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every worker collects, and the controller takes the workers' (identical) order.
    rank = {group: place for place, group in enumerate(SLOWEST)}
    # A stable sort: within a group, and among the unlisted groups, the collection order.
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))
