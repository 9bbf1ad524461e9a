"""Scheduler profiles: which actions run in which order, which plugins in which tiers.

A profile is YAML in the shape of Volcano's scheduler configuration:

    actions: "enqueue, allocate, backfill"       # or a YAML list
    configurations:                               # optional per-action arguments
      - name: allocate
        arguments: {strict: false}
    tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: capacity},
                  {name: placement, arguments: {strategy: binpack}}]

Names are looked up in the action and plugin registries; unknown names, arguments a plugin
does not take, and a plugin listed twice are errors naming the field. Plugins are created
afresh for every cycle, so none carries state from one cycle to the next.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shoal.scheduler.framework import Action, Plugin
from shoal.scheduler.registry import Registry

ACTIONS: Registry[Action] = Registry("action")
PLUGINS: Registry[Plugin] = Registry("plugin")


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginConf(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TierConf(_Strict):
    plugins: list[PluginConf]


class ActionConf(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ProfileDoc(_Strict):
    name: str = "custom"
    description: str = ""
    actions: list[str]
    configurations: list[ActionConf] = Field(default_factory=list)
    tiers: list[TierConf] = Field(default_factory=list)

    @field_validator("actions", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [a.strip() for a in value.split(",") if a.strip()]
        return value


@dataclass(frozen=True)
class Profile:
    """A validated profile; `plugins()` and `actions()` make fresh instances."""

    doc: ProfileDoc

    @property
    def name(self) -> str:
        return self.doc.name

    def plugins(self) -> list[Plugin]:
        return [PLUGINS.create(p.name, p.arguments) for t in self.doc.tiers for p in t.plugins]

    def actions(self) -> list[Action]:
        arguments = {c.name: c.arguments for c in self.doc.configurations}
        from shoal.scheduler.actions.allocate import Allocate
        from shoal.scheduler.actions.backfill import Backfill, Reservation

        actions = [ACTIONS.create(a, arguments.get(a)) for a in self.doc.actions]
        by_estimates = any(isinstance(a, Backfill) and a.reservation is Reservation.ESTIMATES
                           for a in actions)
        for action in actions:
            # Best-effort tasks are the backfill action's alone (`actions.allocate`):
            # allocate tells them so when the profile has none.
            if isinstance(action, Allocate):
                action.backfill_runs = "backfill" in self.doc.actions
                action.later = tuple(self.doc.actions[self.doc.actions.index(action.name) + 1:])
                action.lines_for_backfill = by_estimates and "backfill" in action.later
        return actions

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.doc.tiers for p in t.plugins]

    @staticmethod
    def from_dict(data: Mapping[str, Any], source: str = "profile") -> Profile:
        _register_builtins()
        try:
            doc = ProfileDoc.model_validate(dict(data))
        except ValidationError as exc:
            raise ProfileError("\n".join(
                f"{source}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors())) from None
        problems: list[str] = []
        if not doc.actions:
            problems.append("actions: at least one action is required")
        for i, action in enumerate(doc.actions):
            if action not in ACTIONS.names():
                problems.append(f"actions[{i}]: unknown action {action!r}; known: "
                                f"{', '.join(ACTIONS.names())}")
        if len(set(doc.actions)) != len(doc.actions):
            problems.append("actions: an action is listed twice")
        for i, conf in enumerate(doc.configurations):
            if conf.name not in doc.actions:
                problems.append(f"configurations[{i}].name: {conf.name!r} is not in actions")
        seen: set[str] = set()
        for t, tier in enumerate(doc.tiers):
            for p, plugin in enumerate(tier.plugins):
                where = f"tiers[{t}].plugins[{p}]"
                if plugin.name in seen:
                    problems.append(f"{where}.name: plugin {plugin.name!r} is listed twice")
                seen.add(plugin.name)
                if plugin.name not in PLUGINS.names():
                    problems.append(f"{where}.name: unknown plugin {plugin.name!r}; known: "
                                    f"{', '.join(PLUGINS.names())}")
        profile = Profile(doc)
        if not problems:
            for build in (profile.plugins, profile.actions):
                try:
                    build()
                except ValueError as exc:
                    problems.append(str(exc))
        if problems:
            raise ProfileError("\n".join(f"{source}: {p}" for p in problems))
        return profile

    @staticmethod
    def from_yaml(text: str, source: str = "profile") -> Profile:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ProfileError(f"{source}: not valid YAML: {exc}") from None
        if not isinstance(data, Mapping):
            raise ProfileError(f"{source}: a profile is a YAML mapping")
        return Profile.from_dict(data, source)

    @staticmethod
    def load(name: str) -> Profile:
        """A built-in profile by name. (Reading a profile *file* is the callers' business —
        `shoal.cli.profiles.load_profile` — so that the scheduler package does no I/O.)"""
        if name not in BUILTIN_PROFILES:
            raise ProfileError(f"no built-in profile {name!r} (built-in: "
                               f"{', '.join(sorted(BUILTIN_PROFILES))})")
        return _builtin(name)

    @staticmethod
    def default() -> Profile:
        return Profile.load("default")


@functools.cache
def _builtin(name: str) -> Profile:
    # Parsed once: a Profile is immutable, and the API checks every submission against one.
    return Profile.from_yaml(BUILTIN_PROFILES[name], name)


BUILTIN_PROFILES = {
    "default": """
name: default
description: Gang scheduling with priorities, virtual-cluster quotas and bin-packing; elastic
  jobs grow step by step into what is idle; GPU tasks bring CPU for their GPUs and CPU-only
  tasks leave idle GPUs theirs (gpu-discipline).
actions: "services, enqueue, allocate, backfill, elastic"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}, {name: gpu-discipline}]
""",
    "strict-fifo": """
name: strict-fifo
description: Like default, but each virtual cluster is strictly ordered and backfilled.
actions: "enqueue, allocate, backfill"
configurations:
  - name: allocate
    arguments: {strict: true}
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}, {name: gpu-discipline}]
""",
    "spread": """
name: spread
description: Like default, but tasks are spread over the emptiest nodes.
actions: "enqueue, allocate, backfill"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity},
              {name: placement, arguments: {strategy: spread}}, {name: gpu-discipline}]
""",
    "elastic": """
name: elastic
description: Like default, with job-level preemption and reclaim that take elastic surplus
  first, then elastic jobs grow step by step into what is idle; only elastic surplus borrows
  other virtual clusters' guarantees (capacity reclaimMode elastic, seed 001).
actions: "services, enqueue, allocate, backfill, preempt, reclaim, elastic"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: elastic}},
              {name: placement}, {name: gpu-discipline}]
""",
    # ---- baselines, for comparisons in the simulator -------------------------------------
    "fifo": """
name: fifo
description: Strict first-come first-served over the whole cluster; no backfill, no priority.
actions: "enqueue, allocate"
configurations:
  - name: allocate
    arguments: {strict: true, ordering: global}
tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""",
    "fifo-backfill": """
name: fifo-backfill
description: Strict FIFO with EASY backfill on runtime estimates.
actions: "enqueue, allocate, backfill"
configurations:
  - name: allocate
    arguments: {strict: true, ordering: global}
  - name: backfill
    arguments: {reservation: estimates}
tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""",
    "sjf": """
name: sjf
description: Shortest job first by runtime estimate (the simulator's oracle), non-preemptive.
actions: "enqueue, allocate"
configurations:
  - name: allocate
    arguments: {ordering: global}
tiers:
  - plugins: [{name: sjf}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""",
    # ---- las: least-attained-service with preemption (plugins/las.py, actions/preempt.py) --
    "las": """
name: las
description: Tiresias-style discretised least-attained-service with preemption.
actions: "enqueue, allocate, preempt"
configurations:
  - name: allocate
    arguments: {ordering: global}
tiers:
  - plugins: [{name: las}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""",
    "las-elastic": """
name: las-elastic
description: Least attained service over elastic jobs - las, then the elastic action grows
  jobs into what is idle, the least served first; preemption takes elastic surplus first.
actions: "enqueue, allocate, preempt, elastic"
configurations:
  - name: allocate
    arguments: {ordering: global}
tiers:
  - plugins: [{name: las}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""",
    # ---- end las ---------------------------------------------------------------------------
    # ---- fairshare: seed 002's GpuPriorityCFS (plugins/fairshare.py, actions/fairshare.py) -
    "fairshare": """
name: fairshare
description: Seed 002's fair share - jobs ordered by weighted running time (GPU >> CPU >>
  memory, divided by the priority weight); after allocate and backfill, the least served
  jobs start or grow one step at a time, and when shares are far from even the most served
  elastic job gives one step to the least served; a job that changed size within its
  freezing window is left alone. Each virtual cluster deserves its weight's share of what
  is asked (Volcano's proportion); what one uses above it is lent while nobody else asks
  and reclaimed, least work lost first, when a virtual cluster below its share waits.
  Waiting jobs age (a job's priority doubles every 15 minutes it waits) and a starving one
  holds a reservation; users, and virtual clusters at equal shares, are ordered by their
  decayed usage; GPU tasks bring CPU and CPU work leaves idle GPUs theirs.
actions: "services, enqueue, allocate, backfill, reclaim, fairshare"
tiers:
  - plugins: [{name: fairshare}, {name: priority, arguments: {agingHalfLife: 900}},
              {name: gang}]
  - plugins: [{name: predicates},
              {name: capacity, arguments: {share: proportional, reclaimMode: reclaim}},
              {name: usage}, {name: placement}, {name: gpu-discipline}]
""",
    # ---- end fairshare ---------------------------------------------------------------------
}

_registered = False


def _register_builtins() -> None:
    global _registered  # noqa: PLW0603 - registration happens once per process
    if _registered:
        return
    _registered = True
    from shoal.scheduler.actions.allocate import Allocate, AllocateArguments
    from shoal.scheduler.actions.backfill import Backfill, BackfillArguments
    from shoal.scheduler.actions.elastic import Elastic, ElasticArguments
    from shoal.scheduler.actions.enqueue import Enqueue, EnqueueArguments
    from shoal.scheduler.plugins.capacity import Capacity, CapacityArguments
    from shoal.scheduler.plugins.gang import Gang, GangArguments
    from shoal.scheduler.plugins.placement import Placement, PlacementArguments
    from shoal.scheduler.plugins.predicates import Predicates, PredicatesArguments
    from shoal.scheduler.plugins.priority import Priority, PriorityArguments
    from shoal.scheduler.plugins.sjf import ShortestJobFirst, SjfArguments

    ACTIONS.register("enqueue", EnqueueArguments, Enqueue)
    ACTIONS.register("allocate", AllocateArguments, Allocate)
    ACTIONS.register("backfill", BackfillArguments, Backfill)
    ACTIONS.register("elastic", ElasticArguments, Elastic)
    PLUGINS.register("gang", GangArguments, Gang)
    PLUGINS.register("priority", PriorityArguments, Priority)
    PLUGINS.register("predicates", PredicatesArguments, Predicates)
    PLUGINS.register("placement", PlacementArguments, Placement)
    PLUGINS.register("capacity", CapacityArguments, Capacity)
    PLUGINS.register("sjf", SjfArguments, ShortestJobFirst)
    # ---- las: least-attained-service and the preempt action -------------------------------
    from shoal.scheduler.actions.preempt import Preempt, PreemptArguments
    from shoal.scheduler.actions.reclaim import Reclaim, ReclaimArguments
    from shoal.scheduler.plugins.las import LasArguments, LeastAttainedService

    ACTIONS.register("preempt", PreemptArguments, Preempt)
    ACTIONS.register("reclaim", ReclaimArguments, Reclaim)
    PLUGINS.register("las", LasArguments, LeastAttainedService)
    # ---- end las ---------------------------------------------------------------------------
    # ---- fairshare: seed 002's GpuPriorityCFS ---------------------------------------------
    from shoal.scheduler.actions.fairshare import FairShareAction, FairShareActionArguments
    from shoal.scheduler.plugins.fairshare import FairShare, FairShareArguments

    ACTIONS.register("fairshare", FairShareActionArguments, FairShareAction)
    PLUGINS.register("fairshare", FairShareArguments, FairShare)
    # ---- end fairshare ---------------------------------------------------------------------
    # ---- usage: decayed usage per virtual cluster and user (issue 17) ----------------------
    from shoal.scheduler.plugins.usage import Usage, UsageArguments

    PLUGINS.register("usage", UsageArguments, Usage)
    # ---- gpu-discipline: CPU per GPU, CPU kept for idle GPUs (seed 002) --------------------
    from shoal.scheduler.plugins.gpu_discipline import GpuDiscipline, GpuDisciplineArguments

    PLUGINS.register("gpu-discipline", GpuDisciplineArguments, GpuDiscipline)
    # ---- end gpu-discipline ----------------------------------------------------------------
    # ---- services: online services' time-of-day sizes (seed 002) --------------------------
    from shoal.scheduler.actions.services import Services, ServicesArguments

    ACTIONS.register("services", ServicesArguments, Services)
    # ---- end services ----------------------------------------------------------------------
