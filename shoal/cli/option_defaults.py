"""The values that `shoal`'s option declarations show in `--help` and take as defaults, for
the commands whose work needs heavy modules: `up` (the server, the store, the control loop
and the executors), `schedule` and `sim` (the scheduler and the simulator).

typer reads every command's signature to run any one of them, `shoal submit` included, so
these values cannot come from the modules they describe without loading them all (seconds
of CPU per command). Each is a copy of its source's value; tests/cli/test_light_imports.py
checks every copy against its source, so a change there fails the test until it is made here.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

#: `shoal.scheduler.profile.BUILTIN_PROFILES`'s names.
BUILTIN_PROFILE_NAMES = frozenset({
    "default", "elastic", "fairshare", "fifo", "fifo-backfill", "las", "las-elastic", "sjf",
    "spread", "strict-fifo"})

#: `shoal.spec.limits.DEFAULT_LIMITS`: what one request or one file may hold.
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_TASKS_PER_JOB = 10_000
MAX_NODES = 10_000

#: `shoal.server.logs.FOLLOWS_PER_USER`.
FOLLOWS_PER_USER = 8

#: `shoal.executors.isolation.DEFAULT_PREFIX` and `DEFAULT_WORK_DIR`.
TASK_USER_PREFIX = "shoal-"
WORK_DIR = Path("/var/lib/shoal/work")


class TraceFormat(StrEnum):
    """`shoal.sim.inputs.TraceFormat`, the formats `shoal sim --format` takes."""

    AUTO = "auto"
    PHILLY = "philly"
    ITP = "itp"
    ALIBABA = "alibaba"
    NATIVE = "native"
    POLLUX = "pollux"
