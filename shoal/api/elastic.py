"""Elastic jobs (seed 001): which sizes a job may run at, and how fast it may change size.

An elastic job has one elastic task group, whose size ranges over [min, max] replicas; its
`replicas` is the largest size (as Volcano's `replicas` over `minAvailable`). The allowed
sizes follow the job's step rule — any size, powers of two, or multiples of a factor —, and
both ends of the range must be allowed sizes. The job is scaled one allowed size at a time,
at least `scale_cooldown` seconds apart (the seed's `elastic-cooldown-time`). Its tasks of
index `min_replicas` and above are its *elastic surplus*: what it may lose without
stopping. `protect_for` is Volcano's `volcano.sh/cooldown-time` as its `cdp` plugin defines
it, for any job: a task is neither preempted nor reclaimed before its start plus that time.

Seed 001's annotations (`volcano.sh/elastic-train`, `…-power-of-two`, `…-factor`,
`volcano.sh/elastic-cooldown-time`, `volcano.sh/cooldown-time`) are read by the spec layer
into the same value (`shoal.spec.elastic`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class ScaleStep(StrEnum):
    """Which sizes an elastic job may run at, between its minimum and maximum."""

    ANY = "any"
    """Any size (a factor of 1)."""
    POWER_OF_TWO = "powerOfTwo"
    FACTOR = "factor"
    """Multiples of `Elasticity.factor`."""


@dataclass(frozen=True, slots=True)
class Elasticity:
    group: str
    """The elastic task group; its `replicas` is `max_replicas`."""
    min_replicas: int
    max_replicas: int
    step: ScaleStep = ScaleStep.ANY
    factor: int = 1
    """With `ScaleStep.FACTOR`: sizes are multiples of it."""
    scale_cooldown: float = 0.0
    """Least time between two scaling operations (seconds)."""

    def allows(self, size: int) -> bool:
        if not self.min_replicas <= size <= self.max_replicas:
            return False
        return step_allows(self.step, self.factor, size)

    def sizes(self) -> tuple[int, ...]:
        """Every allowed size, smallest first."""
        return tuple(n for n in range(self.min_replicas, self.max_replicas + 1)
                     if self.allows(n))

    def grown(self, size: int) -> int | None:
        """The next allowed size above `size`; None at the maximum."""
        return next((n for n in self.sizes() if n > size), None)

    def shrunk(self, size: int) -> int | None:
        """The next allowed size below `size`; None at the minimum."""
        return next((n for n in reversed(self.sizes()) if n < size), None)

    def is_surplus(self, group: str, index: int) -> bool:
        """Whether task `index` of `group` is elastic surplus (above the minimum)."""
        return group == self.group and index >= self.min_replicas


def step_allows(step: ScaleStep, factor: int, size: int) -> bool:
    if step is ScaleStep.POWER_OF_TWO:
        return size > 0 and size & (size - 1) == 0
    if step is ScaleStep.FACTOR:
        return size % factor == 0
    return True


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                 "h": 3600.0}


def parse_duration(value: str | int | float) -> float:
    """Seconds, from a number of seconds or a Go duration as Kubernetes annotations write
    them (`10m0s`, `1h30m`, `500ms`, `5s`). Raises ValueError, saying why."""
    if isinstance(value, bool):
        raise ValueError(f"expected seconds or a duration such as 10m0s, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION.findall(text)
            if not text or "".join(n + u for n, u in parts) != text:
                raise ValueError(f"expected seconds or a duration such as 10m0s, got "
                                 f"{value!r}") from None
            seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if seconds < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    return seconds
