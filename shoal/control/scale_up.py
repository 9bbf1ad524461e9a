"""Asking for more machines (seed 003's "upscale of the physical cluster"): when jobs wait
because the cluster itself lacks room, `shoal up --scale-up-hook` calls a command or a URL
with what is missing, as Ray's autoscaler is handed the demands it cannot place.

What is missing (`shortfall`, pure) is what the jobs waiting for capacity still ask for,
less what the schedulable nodes have free, per dimension. "Waiting for capacity" means the
reason kinds that more nodes cure: `InsufficientResources` and `Gang`. A job held by a quota
(`QueueLimit`, `Guarantee`) or by strict FIFO would wait just the same on a bigger cluster,
and an `Unschedulable` one was refused at submission.

The hook is called at most once per cooldown (a new machine takes minutes to join, and the
demand it answers stays until it has), off the loop's thread so that a slow hook never
delays scheduling. A command gets the request as JSON on stdin; a URL gets it POSTed:

    {"missing": {"gpu": 8, "cpu": "16"}, "waitingJobs": ["train-3", ...], "time": 1.7e9}
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from shoal.api import PendingKind, PendingReason, Resources
from shoal.api.resources import total
from shoal.scheduler.model import SchedulerModel

log = logging.getLogger(__name__)

#: The reason kinds that more machines would cure.
CAPACITY_KINDS = frozenset({PendingKind.INSUFFICIENT_RESOURCES, PendingKind.GANG})
#: Seconds a hook may run before it is given up on.
HOOK_TIMEOUT = 60.0


@dataclass(frozen=True)
class ScaleUpRequest:
    missing: Resources
    waiting_jobs: tuple[str, ...]
    time: float

    def to_json(self) -> str:
        return json.dumps({"missing": self.missing.to_quantities(),
                           "waitingJobs": list(self.waiting_jobs), "time": self.time})


def shortfall(model: SchedulerModel, reasons: Mapping[str, PendingReason], now: float
              ) -> ScaleUpRequest | None:
    """What the jobs waiting for capacity ask beyond the nodes' free resources; None when
    nothing is missing."""
    waiting = sorted(name for name, reason in reasons.items()
                     if reason.kind in CAPACITY_KINDS and name in model.waiting)
    demand = total(group.resources.scale(len(model.waiting[name].pending[group.name]))
                   for name in waiting for group in model.waiting[name].groups_with_pending())
    free = total(s.free() for s in model.cluster.states if s.node.schedulable)
    missing = demand.saturating_sub(free)
    if missing.is_zero():
        return None
    return ScaleUpRequest(missing, tuple(waiting), now)


class ScaleUpHook:
    """Calls `target` — a command line, or an http(s) URL — with a `ScaleUpRequest`, at most
    once per `cooldown` seconds."""

    def __init__(self, target: str, cooldown: float = 300.0) -> None:
        self.target = target
        self.cooldown = cooldown
        self.last_call: float | None = None
        self.calls = 0

    def ready(self, now: float) -> bool:
        """The cooldown is over: worth working out what is missing."""
        return self.last_call is None or now >= self.last_call + self.cooldown

    def consider(self, request: ScaleUpRequest | None) -> bool:
        """Call the hook for `request` unless there is none or the cooldown runs; True when
        it was called (the call itself goes on in the background)."""
        if request is None or not self.ready(request.time):
            return False
        self.last_call = request.time
        self.calls += 1
        log.info("cluster short of %s for %d waiting jobs: calling the scale-up hook",
                 request.missing, len(request.waiting_jobs))
        threading.Thread(target=self._call, args=(request,), name="shoal-scale-up",
                         daemon=True).start()
        return True

    def _call(self, request: ScaleUpRequest) -> None:
        body = request.to_json()
        try:
            if self.target.startswith(("http://", "https://")):
                httpx.post(self.target, content=body, timeout=HOOK_TIMEOUT,
                           headers={"Content-Type": "application/json"}).raise_for_status()
            else:
                subprocess.run(shlex.split(self.target), input=body, text=True, check=True,
                               timeout=HOOK_TIMEOUT, capture_output=True)
        except (OSError, subprocess.SubprocessError, httpx.HTTPError) as exc:
            log.warning("the scale-up hook %r failed: %s", self.target, exc)
