"""Shoal's typed value objects: resources, nodes, jobs, tasks, virtual clusters, priority
classes, lifecycle states and scheduling decisions. Everything here is pure data.

The names below are loaded from their modules when first asked for (PEP 562), not all when
the package is: the client verbs of the command line need the states only
(`shoal.api.lifecycle`), and defining the object model's ~80 dataclasses costs a `shoal jobs`
a tenth of its CPU. `from shoal.api import Job` reads the same either way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.api.decisions import (
        Bind,
        Decisions,
        Evict,
        Pending,
        PendingKind,
        PendingReason,
        Reserve,
        Resize,
    )
    from shoal.api.defaults import DEFAULT_QUEUE
    from shoal.api.elastic import Elasticity, ScaleStep, parse_duration
    from shoal.api.lifecycle import (
        JOB_LIFECYCLE,
        TASK_LIFECYCLE,
        IllegalTransitionError,
        JobState,
        NodePhase,
        TaskState,
        Transition,
    )
    from shoal.api.objects import (
        BUILTIN_PRIORITY_CLASSES,
        DEFAULT_ACTIONS,
        GPU_TYPE_LABEL,
        ROOT_QUEUE,
        FailureAction,
        FailureEvent,
        FixedSizeNode,
        FixedSizeNodes,
        Job,
        Node,
        PlacementPolicy,
        PriorityClass,
        QueueingPolicy,
        SchedulerName,
        Task,
        TaskGroup,
        TaskRef,
        VirtualCluster,
        VirtualNodePlacement,
    )
    from shoal.api.resources import (
        ZERO,
        QuantityError,
        ResourceLimit,
        Resources,
        parse_resources,
    )

#: Each public name's module.
_HOMES = {
    **dict.fromkeys(("Bind", "Decisions", "Evict", "Pending", "PendingKind", "PendingReason",
                     "Reserve", "Resize"), "shoal.api.decisions"),
    "DEFAULT_QUEUE": "shoal.api.defaults",
    **dict.fromkeys(("Elasticity", "ScaleStep", "parse_duration"), "shoal.api.elastic"),
    **dict.fromkeys(("JOB_LIFECYCLE", "TASK_LIFECYCLE", "IllegalTransitionError", "JobState",
                     "NodePhase", "TaskState", "Transition"), "shoal.api.lifecycle"),
    **dict.fromkeys(("BUILTIN_PRIORITY_CLASSES", "DEFAULT_ACTIONS", "GPU_TYPE_LABEL",
                     "ROOT_QUEUE", "FailureAction", "FailureEvent", "FixedSizeNode",
                     "FixedSizeNodes", "Job", "Node", "PlacementPolicy", "PriorityClass",
                     "QueueingPolicy", "SchedulerName", "Task", "TaskGroup", "TaskRef",
                     "VirtualCluster", "VirtualNodePlacement"), "shoal.api.objects"),
    **dict.fromkeys(("ZERO", "QuantityError", "ResourceLimit", "Resources",
                     "parse_resources"), "shoal.api.resources"),
}

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "DEFAULT_ACTIONS",
    "DEFAULT_QUEUE",
    "GPU_TYPE_LABEL",
    "JOB_LIFECYCLE",
    "ROOT_QUEUE",
    "TASK_LIFECYCLE",
    "ZERO",
    "Bind",
    "Decisions",
    "Elasticity",
    "Evict",
    "FailureAction",
    "FailureEvent",
    "FixedSizeNode",
    "FixedSizeNodes",
    "IllegalTransitionError",
    "Job",
    "JobState",
    "Node",
    "NodePhase",
    "Pending",
    "PendingKind",
    "PendingReason",
    "PlacementPolicy",
    "PriorityClass",
    "QuantityError",
    "QueueingPolicy",
    "Reserve",
    "Resize",
    "ResourceLimit",
    "Resources",
    "ScaleStep",
    "SchedulerName",
    "Task",
    "TaskGroup",
    "TaskRef",
    "TaskState",
    "Transition",
    "VirtualCluster",
    "VirtualNodePlacement",
    "parse_duration",
    "parse_resources",
]

if not TYPE_CHECKING:  # to the type checker, the imports above are the names
    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # asked once: the next lookup is a plain global
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
