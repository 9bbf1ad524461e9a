"""The work model: how fast a job progresses on the GPUs it holds, and what an eviction
throws away.

A job's work is its trace duration at its requested size, in "seconds at full size". Running
on `g` GPUs it progresses at `speedup(g) / speedup(requested)` per second, where the speed-up
curve is linear by default or read from a per-model scalability table (GPUs → relative
throughput, linearly interpolated, flat beyond the last point). An evicted job keeps the
work done up to its last checkpoint; checkpoints are taken every `checkpoint_interval`
seconds of running time, and with none (the default) it loses everything since it started.
A job's own interval (`spec.checkpointInterval`, `Job.checkpoint_interval`) wins over the
model's, which is the simulator's default for jobs that declare none (`--checkpoint`).
"""

from __future__ import annotations

import bisect
import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class SpeedupCurve(Protocol):
    def speedup(self, gpus: int) -> float:
        """Throughput on `gpus` GPUs, relative to any fixed reference (only ratios matter)."""
        ...


class LinearSpeedup:
    def speedup(self, gpus: int) -> float:
        return float(gpus)


@dataclass(frozen=True)
class TableSpeedup:
    """Measured throughput per GPU count; linear between points, flat beyond the ends."""

    points: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a scalability table needs at least one point")
        gpus = [g for g, _ in self.points]
        if gpus != sorted(set(gpus)) or any(g <= 0 for g in gpus):
            raise ValueError("scalability table GPU counts must be positive and increasing")
        if any(t <= 0 for _, t in self.points):
            raise ValueError("scalability table throughputs must be positive")

    def speedup(self, gpus: int) -> float:
        xs = [g for g, _ in self.points]
        i = bisect.bisect_left(xs, gpus)
        if i < len(xs) and xs[i] == gpus:
            return self.points[i][1]
        if i == 0:
            # Below the first measurement: proportional to it (0 GPUs → no progress).
            return self.points[0][1] * gpus / xs[0]
        if i == len(xs):
            return self.points[-1][1]
        (g0, t0), (g1, t1) = self.points[i - 1], self.points[i]
        return t0 + (t1 - t0) * (gpus - g0) / (g1 - g0)

    @staticmethod
    def read(path: str | Path) -> TableSpeedup:
        """A CSV with header `gpus,throughput`."""
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not {"gpus", "throughput"} <= set(reader.fieldnames):
                raise ValueError(f"{path}: expected a header 'gpus,throughput'")
            points = []
            for line, row in enumerate(reader, start=2):
                try:
                    points.append((int(row["gpus"]), float(row["throughput"])))
                except ValueError:
                    raise ValueError(f"{path}:{line}: not a number: {row}") from None
        return TableSpeedup(tuple(sorted(points)))


@dataclass(frozen=True)
class WorkModel:
    default: SpeedupCurve = field(default_factory=LinearSpeedup)
    per_model: Mapping[str, SpeedupCurve] | None = None
    checkpoint_interval: float | None = None

    def rate(self, model: str | None, requested: int, held: int) -> float:
        """Work seconds done per simulated second on `held` of `requested` GPUs."""
        if held == requested:
            return 1.0
        curve = (self.per_model or {}).get(model or "", self.default)
        if requested == 0:
            return 1.0
        return curve.speedup(held) / curve.speedup(requested)

    def kept_on_eviction(self, ran_for: float, interval: float | None = None) -> float:
        """Seconds of this run's progress that survive an eviction after `ran_for` seconds,
        checkpointing every `interval` seconds (the job's own), else the model's."""
        every = self.checkpoint_interval if interval is None else interval
        if every is None or every <= 0:
            return 0.0
        return math.floor(ran_for / every) * every
