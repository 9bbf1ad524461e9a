"""The predicates plugin: which nodes may host a task group at all.

A node qualifies when it is schedulable and its labels match the group's `nodeSelector`
(the GPU model is the `gpu-type` label, so `nodeSelector: {gpu-type: A100}` is the GPU-type
predicate). Resource fit is the node index's job, not a predicate (see
`shoal.scheduler.framework`).
"""

from __future__ import annotations

from collections.abc import Hashable

from shoal.api.objects import GPU_TYPE_LABEL, Node, TaskGroup
from shoal.scheduler.registry import Arguments


class PredicatesArguments(Arguments):
    pass


class Predicates:
    name = "predicates"

    def __init__(self, arguments: PredicatesArguments) -> None:
        self.arguments = arguments

    def pool_key(self, group: TaskGroup) -> Hashable:
        selector = group.node_selector
        return tuple(sorted(selector.items())) if selector else ()

    def node_filter(self, group: TaskGroup, node: Node) -> str | None:
        for key, wanted in sorted(group.node_selector.items()):
            have = node.labels.get(key)
            if have != wanted:
                if key == GPU_TYPE_LABEL:
                    return f"have no {wanted} GPUs (gpu-type)"
                return f"do not match nodeSelector {key}={wanted}"
        return None
