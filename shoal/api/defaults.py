"""Shoal's defaults that more than one layer shows or applies: the queue a job lands in, the
bounds of one load, the follows one user may hold, the task users' name prefix and work
directory.

Each is defined here and only here: the layers that apply them (the spec's `Limits`, the
server's log follows, the executors' isolation, the quota tree) and the command line that
shows them in `--help` (`shoal up`) all import this module. It imports nothing of Shoal's
and nothing heavy, so `shoal --help` and the client verbs read it for free.
"""

from __future__ import annotations

from pathlib import Path

#: The virtual cluster every job lands in when it names no queue (seed 003: min 0, max ∞).
DEFAULT_QUEUE = "default"

#: What one request or one file may hold by default (`shoal.spec.limits.Limits`; `shoal up`
#: flags of the same names change them).
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_TASKS_PER_JOB = 10_000
MAX_NODES = 10_000

#: Follows (`shoal logs -f`) one user may hold open at once, unless `shoal up` is told
#: otherwise.
FOLLOWS_PER_USER = 8

#: Task users are named `PREFIX<user>` (`shoal.executors.isolation`).
TASK_USER_PREFIX = "shoal-"
#: Where tasks' working directories are made, under one directory per job.
TASK_WORK_DIR = Path("/var/lib/shoal/work")
