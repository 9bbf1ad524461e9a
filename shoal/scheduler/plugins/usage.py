"""The usage plugin (issue 17, seed 002's fairness across queues and users): sibling
virtual clusters and the users inside one are served least-used first, by their decayed
usage (`shoal.core.usage`: Slurm's fair-share with `PriorityDecayHalfLife`, Kueue's
admission fair sharing).

- Queue order: a higher `priority` first (as the capacity plugin, `shoal.scheduler.
  queue_status`), then the smallest decayed usage of the virtual cluster's whole subtree
  per unit of its `weight` — Kueue's admission fair sharing divides by the queue's weight
  as well. Listed after the capacity plugin (as in the `fairshare` profile), it only breaks
  ties between virtual clusters that the capacity plugin's share puts level.
- Job order within a virtual cluster: the job whose user has the smallest decayed usage in
  it first, so a heavy user's backlog does not starve a light user (Slurm's fair-tree
  within an account). Equal usage falls through to the next plugin, then submission.

Usage is one number per entry: `weights` × (GPU-seconds, core-seconds, GiB-seconds), GPU ≫
CPU ≫ memory by default (`UsageWeights`). `halfLife` is read by the drivers, which charge the
ledger (`usage_half_life`); here it only documents the profile's choice.

Not time dependent: between two charges the clock scales every entry by the same factor, so
the order does not move with the clock alone; it moves when the driver charges the ledger,
before a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from shoal.core.quota import QueueState
from shoal.core.usage import DEFAULT_HALF_LIFE, UsageWeights
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import user_of
from shoal.scheduler.queue_status import QueuePriorities
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.profile import Profile
    from shoal.scheduler.session import Session

NAME = "usage"


class UsageWeightsArguments(Arguments):
    gpu: float = Field(default=1.0, ge=0, allow_inf_nan=False,
                       description="weight of one GPU-second")
    cpu: float = Field(default=0.01, ge=0, allow_inf_nan=False,
                       description="weight of one core-second")
    memory: float = Field(default=0.001, ge=0, allow_inf_nan=False,
                          description="weight of one GiB-second")


class UsageArguments(Arguments):
    half_life: float = Field(
        default=DEFAULT_HALF_LIFE, alias="halfLife", gt=0, allow_inf_nan=False,
        description="seconds after which past usage counts half (Slurm's "
                    "PriorityDecayHalfLife; default 7 days)")
    weights: UsageWeightsArguments = Field(
        default_factory=UsageWeightsArguments,
        description="how GPU-, core- and GiB-seconds add up to one usage figure")


class Usage:
    name = NAME

    def __init__(self, arguments: UsageArguments) -> None:
        w = arguments.weights
        self.weights = UsageWeights(w.gpu, w.cpu, w.memory)
        self.priorities: QueuePriorities | None = None
        self.subtree: dict[str, float] = {}
        """Virtual cluster → weighted usage of its whole subtree."""
        self.users: dict[tuple[str, str], float] = {}
        """(virtual cluster, user) → the user's weighted usage in it (its own jobs)."""

    def open_session(self, session: Session) -> None:
        self.priorities = QueuePriorities.of(session.quota)
        self.subtree = {}
        self.users = {}
        for key, used in session.model.usage.entries.items():
            value = self.weights.of(used)
            self.users[(key.vc, key.user)] = value
            if key.vc not in session.quota.queues:
                continue  # a virtual cluster removed since: its usage orders nothing
            for queue in session.quota.get(key.vc).path():
                self.subtree[queue.name] = self.subtree.get(queue.name, 0.0) + value

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]:
        assert self.priorities is not None
        return (*self.priorities.key(queue), self.subtree.get(queue.name, 0.0) / queue.weight)

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (self.users.get((job.queue, user_of(job)), 0.0),)


def usage_half_life(profile: Profile) -> float:
    """The half-life a driver decays its usage ledger with: the profile's `usage` plugin's
    `halfLife`, else the default (usage is kept under every profile, so a switch to one
    that orders by it starts from what was used)."""
    for tier in profile.doc.tiers:
        for plugin in tier.plugins:
            if plugin.name == NAME:
                return UsageArguments.model_validate(plugin.arguments).half_life
    return DEFAULT_HALF_LIFE
