"""Restarting a gang whose member was lost: a base class of `ControlPlane`, on the loop's
thread, beside `shoal.control.stopping`, whose machinery it reuses.

Why. The tasks of a gang (a job placed as one, `completion.restarts_whole`) usually form one
distributed world: torch.distributed ranks meet in every all_reduce. When one of them is
lost — its process or its machine vanished — its peers block in a collective that waits for
it. A lost task retried alone would join a world that no longer exists, and its peers would
wait forever. So, as Volcano's `PodEvicted → RestartJob` policy and JobSet's restart of the
whole set do, the gang is restarted whole: the lost task is charged one task retry (its
group's `taskRetryCount`), its peers are stopped with the grace period, and every unfinished
task is placed again together, as a gang, as a new attempt.

How. It is a job retry's path (`Verdict.RETRY_JOB`) without growing the job's `retries`:
one transaction (`Repository.restart_gang`) records the lost task FAILED then PENDING (one
retry more, its own), its peers that hold resources RELEASING, and the stop under way
(`stopping_jobs` reads it as a stop to PENDING); then the loop withdraws the job from the
model and signals the peers (`Stopping._carry_out_stop`). As each peer stops it goes back to
PENDING; once none is left, `Repository.finish_stop` puts the job back to PENDING (tasks that
had finished keep their outcome, and every task its retries) and the loop hands it to the
scheduler afresh. A control plane that crashes in between finds the stop in the store at
start and finishes it, as it finishes a job retry's; a `cancel` meanwhile turns it into a
cancellation.

What does not restart the gang: a gang task that *exits* badly (a code, a signal) is retried
in place, Shoal's documented OpenPAI rule; an elastic job's lost task is retried in place
(the job goes on at a smaller size, and torchrun re-rendezvouses); a task past its
`taskRetryCount` follows the job's rules (`minFailed`, `jobRetryCount`). A task group's
`policies` (Volcano's event → action) change the first rule for its tasks: `TaskFailed →
RestartGang` restarts the gang on an exit too, `TaskLost → RestartTask` retries a lost task
alone. `shoal.control.completion` decides; this module carries the decision out.
"""

from __future__ import annotations

import logging

from shoal.api import JobState
from shoal.control.stopping import Stopping
from shoal.executors.task import TaskPhase, TaskStatus
from shoal.store.stops import FailedTask

log = logging.getLogger(__name__)


def lost_detail(status: TaskStatus) -> str | None:
    """What the executor said of a lost task ("" if nothing); None: it was not lost."""
    return status.detail if status.phase is TaskPhase.LOST else None


class GangRestarting(Stopping):
    """`ControlPlane` supplies the store, the model and the tracked tasks (`Stopping`)."""

    def _restart_gang(self, lost: FailedTask, cause: str) -> None:
        """Task `lost.ref` was lost and its gang is restarted: store the decision, give
        the lost task's resources back, then stop its peers; the gang is placed again once
        they have stopped."""
        self._settle_launches()  # its peers being launched are stopped with the others
        job = self.repository.restart_gang(lost, cause)
        log.info("job %s: %s", job.name, cause)
        self._finish_task(lost.ref)
        self._carry_out_stop(job, JobState.PENDING, cause)
