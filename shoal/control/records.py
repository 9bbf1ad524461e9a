"""What the control loop keeps on disk beside the store.

- `MasterPorts`: the MASTER_PORT of each job, chosen once when its first task launches and
  kept in memory *and* in a journal under the executor's root (`port_journal`), so that a
  task launched after a restart (a bound-but-never-launched one) joins the same rendezvous
  as its running peers.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from shoal.control.port_journal import PortJournal
from shoal.executors.processes import free_port


class MasterPorts:
    """MASTER_PORT per job: chosen once (a new free port), kept in `directory`'s journal
    (`shoal.control.port_journal`) as `{"": port}`."""

    def __init__(self, directory: Path, pick: Callable[[], int] = free_port) -> None:
        self.directory = Path(directory)
        self._pick = pick
        self._journal = PortJournal(self.directory)

    def get(self, job: str) -> int:
        port = self.known(job)
        if port is None:
            port = self._pick()
            self._journal.put(job, {"": port})
        return port

    def known(self, job: str) -> int | None:
        """The job's port if one was chosen; never chooses one."""
        return (self._journal.get(job) or {}).get("")

    def forget(self, job: str) -> None:
        """The job ended: its port is no longer reserved."""
        self._journal.drop(job)

    def deferred(self) -> AbstractContextManager[None]:
        """The journal's lines held back within, written at once on leaving
        (`PortJournal.deferred`)."""
        return self._journal.deferred()
