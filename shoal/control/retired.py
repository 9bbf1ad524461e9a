"""Moving the engine files of jobs kept in history (`shoal.store.job_names`): when a new
job takes an ended job's name, the ended job's files (logs, its attempts' records) move to
its history name before the new job can be placed, so that the new job's attempts start
from scratch and the old job's logs stay readable. Run by the control loop, on its thread:
queued ahead of the new job's admission, and at start for moves a restart left undone.
"""

from __future__ import annotations

import logging

from shoal.executors.contract import Executor
from shoal.store import Repository

log = logging.getLogger(__name__)


def move_retired_files(repository: Repository, executor: Executor) -> None:
    """Move the files of every job moved into history whose files were not moved yet. A
    move that fails forgets them instead: the new job must never find the old one's
    attempts (its logs are lost then, and the failure logged)."""
    for files_of, kept in repository.retired_files():
        try:
            executor.rename_job(files_of, kept)
        except (OSError, ValueError):
            log.exception("cannot move the files of job %s to %s; removing them", files_of,
                          kept)
            executor.forget_job(files_of)
        repository.files_moved(kept)
