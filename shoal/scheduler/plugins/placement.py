"""The placement plugin: bin-packing or spreading, as the node search order and a score.

`binpack` fills the fullest nodes that fit first, so whole machines stay free for large gangs
(the usual choice for GPU clusters). `spread` puts each task on the emptiest node, for
services and fault isolation. The search order picks the GPU level; the score, over the
first feasible candidates, refines by the other dimensions, GPU weighing most (seed 002's
GPU > CPU > memory).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import Field

from shoal.api.resources import Resources
from shoal.core.nodes import NodeState
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session

#: Relative weights of the dimensions in a placement score (GPU ≫ CPU ≫ memory).
WEIGHTS = {"gpu": 100.0, "cpu": 10.0, "memory": 1.0}


class Strategy(StrEnum):
    BINPACK = "binpack"
    SPREAD = "spread"


class PlacementArguments(Arguments):
    strategy: Strategy = Strategy.BINPACK
    candidates: int = Field(default=16, ge=1, le=10_000,
                            description="feasible nodes scored per task (as kube-scheduler's "
                                        "percentageOfNodesToScore, but a count)")


class Placement:
    name = "placement"

    def __init__(self, arguments: PlacementArguments) -> None:
        self.arguments = arguments
        self.strategy = arguments.strategy

    def open_session(self, session: Session) -> None:
        session.candidates_to_score = self.arguments.candidates

    def spread(self, request: Resources) -> bool:
        return self.strategy is Strategy.SPREAD

    def node_score(self, request: Resources, node: NodeState) -> float:
        """Binpack: the node's weighted utilisation after placement; spread: what stays free.
        Both in [0, 1]."""
        alloc = node.allocatable
        binpack = self.strategy is Strategy.BINPACK
        score = weight = 0.0
        # GPU, CPU, memory, in that order (the sums' order: the same float as a loop's),
        # spelt out: asked of up to `candidates` nodes per placement.
        cap = alloc.gpu
        if cap > 0:
            w = WEIGHTS["gpu"]
            used_after = (cap - node.gpu + request.gpu) / cap
            score += w * (used_after if binpack else 1.0 - used_after)
            weight += w
        cap = alloc.cpu
        if cap > 0:
            w = WEIGHTS["cpu"]
            used_after = (cap - node.cpu + request.cpu) / cap
            score += w * (used_after if binpack else 1.0 - used_after)
            weight += w
        cap = alloc.memory
        if cap > 0:
            w = WEIGHTS["memory"]
            used_after = (cap - node.memory + request.memory) / cap
            score += w * (used_after if binpack else 1.0 - used_after)
            weight += w
        return score / weight if weight else 0.0
