"""The thread that runs the durable dispatcher in `shoal up --clusters` (issue 19): a
`Dispatcher.step` on the wall clock every `--mc-poll` seconds, sooner when the policy's
`wake_at` (a guard or survival window ending) comes first, and at once when a job is
submitted or stopped (`nudge`). A pass that fails is logged and the loop goes on: a member
or a job never stops the dispatcher.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from shoal.federation.dispatcher import Dispatcher

log = logging.getLogger(__name__)

DEFAULT_POLL_S = 5.0
MIN_WAIT_S = 0.05


class DispatchLoop:
    """`Dispatcher.step` on a thread until `stop`."""

    def __init__(self, dispatcher: Dispatcher, *, poll_s: float = DEFAULT_POLL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.dispatcher = dispatcher
        self.poll_s = poll_s
        self.clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shoal-mc-dispatch",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def nudge(self) -> None:
        """Run a pass now (a job was submitted or stopped)."""
        self._wake.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=timeout_s)
        self.dispatcher.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = self.clock()
            wake: float | None = None
            try:
                wake = self.dispatcher.step(now)
            except Exception:
                log.exception("the multi-cluster dispatch pass failed; retrying")
            wait = self.poll_s
            if wake is not None:
                wait = min(wait, max(MIN_WAIT_S, wake - self.clock()))
            self._wake.wait(wait)
            self._wake.clear()
