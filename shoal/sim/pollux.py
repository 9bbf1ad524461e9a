"""The Pollux application model (OSDI'21 artifact, `../shared/traces/pollux/traces/<app>/`),
for jobs that keep the batch size they were submitted with, and for jobs that adapt it.

Each application directory holds measurements on a cluster of 4-GPU nodes:

- `placements.csv` (`placement,local_bsz,step_time,sync_time`): the time of one training
  step for a placement — one digit per node, the replicas on it (`44` is 8 replicas on two
  nodes) — and a per-replica batch size;
- `scalability.csv` (`num_nodes,num_replicas,local_bsz,step_time,sync_time`): the same for
  larger placements, by node and replica count;
- `validation-<batch>.csv` (`progress,iteration,metric,…`): training at that global batch
  size, one row per epoch: `iteration` is the steps taken by the end of the epoch.

A job of application A with global batch size B needs `iteration[E - 1]` steps of
`validation-B.csv`, E being A's epoch count (the artifact's `max_epochs`: bert 2, cifar10
100, ncf 10, imagenet 90, deepspeech2 80, yolov3 50). On `r` replicas packed onto 4-GPU nodes
(`4…4k`), one step takes `step_time(placement, B / r)`; a per-replica batch above A's largest
measured one is reached by gradient accumulation (the artifact's rule: `k` extra
micro-steps of the same size, each costing a step without its synchronisation). So its run
time on `r` GPUs is `steps × step time`, and its speed-up curve is the inverse of the step
time (`shoal.sim.work.TableSpeedup`), for every `r` whose per-replica batch is at least A's
smallest measured one.

Jobs that adapt their batch size (`adaptive_run_time`, `adaptive_speedup`). Under Pollux,
each job's AdaptDL library picks its batch size for the GPUs it is given, trading throughput
against statistical efficiency. The validation files measure that trade: at a larger batch a
job needs more samples (`iteration × batch` grows) to reach the same `progress`. A job that
adapts runs, on `r` replicas, with the validated batch size that finishes soonest,
`min_b steps(b) × step_time(r, b)`, and its speed-up curve is the inverse of that envelope.
AdaptDL starts a job at the application's initial batch size and may raise it to its
largest; here every validated batch size is in its range. The choice is the job's, not the
scheduler's: Shoal's policies see only the speed-up it yields.

Differences from the artifact's model, on purpose:
- A job that keeps its batch size keeps it throughout. One that adapts switches at once
  to the best batch size for its replica count, and a batch size's efficiency is the one
  measured over the whole training (its step count to the target epoch), where the
  artifact evolves it with the gradient statistics (`grad_sqr`, `grad_var`) along the
  training. Never more replicas than it asked for (Pollux may give it more).
- Step times are interpolated linearly in the per-replica batch size within one measured
  placement (packed placements, as the scheduler's binpack produces), or within one
  `(num_nodes, num_replicas)` row set of `scalability.csv`; a replica count measured in
  neither is interpolated linearly between the nearest counts that are. The artifact uses
  SciPy's `LinearNDInterpolator` over nodes, replicas and batch size; Shoal needs no SciPy.
- Outside a placement's measured batch sizes the nearest measurement is used (clamped).
"""

from __future__ import annotations

import bisect
import csv
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from shoal.sim.trace import TraceError
from shoal.sim.work import TableSpeedup

#: GPUs per node of the measured cluster (16 nodes × 4 GPUs).
GPUS_PER_NODE = 4
#: Epochs to completion per application (the artifact's `max_epochs`).
EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80,
          "yolov3": 50}
#: Largest per-replica batch without gradient accumulation, where the artifact sets one.
MAX_LOCAL_BATCH = {"yolov3": 8}

Curve = tuple[tuple[float, float, float], ...]
"""Measurements of one placement: (local batch size, step time, sync time), sorted."""


@dataclass(frozen=True, eq=False)  # compared by identity: `_curve` caches per instance
class Application:
    name: str
    epochs: int
    placements: Mapping[str, Curve]
    """By normalised placement id (`24` for 4 + 2 replicas)."""
    scalability: Mapping[tuple[int, int], Curve]
    """By (num_nodes, num_replicas)."""
    iterations: Mapping[int, int]
    """Steps to completion, by validated global batch size."""
    min_local: float
    max_local: float

    @staticmethod
    def load(directory: str | os.PathLike[str], epochs: int | None = None) -> Application:
        """Read one application directory; `epochs` defaults to the artifact's."""
        path = Path(directory)
        name = path.name
        epochs = epochs if epochs is not None else EPOCHS.get(name)
        if epochs is None:
            raise TraceError(os.fspath(path), None, None,
                             f"unknown application {name!r}: give its epochs "
                             f"(known: {', '.join(sorted(EPOCHS))})")
        placements: dict[str, list[tuple[float, float, float]]] = {}
        for line, row in _rows(path / "placements.csv",
                               ("placement", "local_bsz", "step_time", "sync_time")):
            placements.setdefault(_normalised(row["placement"]), []).append(
                _point(path / "placements.csv", line, row))
        scalability: dict[tuple[int, int], list[tuple[float, float, float]]] = {}
        columns = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
        for line, row in _rows(path / "scalability.csv", columns):
            key = (int(row["num_nodes"]), int(row["num_replicas"]))
            scalability.setdefault(key, []).append(_point(path / "scalability.csv", line, row))
        iterations: dict[int, int] = {}
        for validation in sorted(path.glob("validation-*.csv")):
            batch = int(validation.stem.removeprefix("validation-"))
            rows = list(_rows(validation, ("iteration",)))
            if len(rows) < epochs:
                raise TraceError(os.fspath(validation), None, None,
                                 f"has {len(rows)} epochs, {epochs} needed")
            iterations[batch] = int(float(rows[epochs - 1][1]["iteration"]))
        if not placements or not iterations:
            raise TraceError(os.fspath(path), None, None,
                             "expected placements.csv and validation-<batch>.csv files")
        local = [p[0] for curve in placements.values() for p in curve]
        return Application(
            name, epochs, {k: tuple(sorted(v)) for k, v in placements.items()},
            {k: tuple(sorted(v)) for k, v in scalability.items()}, iterations,
            min(local), float(MAX_LOCAL_BATCH.get(name, max(local))))

    def steps(self, batch: int) -> int:
        """Steps to completion at global batch size `batch` (a validated one)."""
        try:
            return self.iterations[batch]
        except KeyError:
            raise ValueError(f"{self.name}: batch size {batch} was not validated "
                             f"(validated: {', '.join(map(str, sorted(self.iterations)))})"
                             ) from None

    def max_replicas(self, batch: int) -> int:
        """The most replicas a global batch of `batch` can be split over."""
        return max(1, math.floor(batch / self.min_local + 1e-9))

    def step_time(self, replicas: int, batch: int) -> float:
        """Seconds per step with `replicas` packed replicas sharing a global batch."""
        local = batch / replicas
        extra = math.ceil(local / self.max_local - 1e-8) - 1
        atomic = math.ceil(local / (extra + 1) - 1e-8)
        step, sync = self._measured(replicas, atomic)
        return step + extra * (step - sync)

    def run_time(self, replicas: int, batch: int) -> float:
        return self.steps(batch) * self.step_time(replicas, batch)

    def speedup(self, batch: int, up_to: int) -> TableSpeedup:
        """Relative throughput on 1 … `up_to` replicas (at most `max_replicas(batch)`)."""
        top = min(up_to, self.max_replicas(batch))
        return TableSpeedup(tuple((r, 1.0 / self.step_time(r, batch))
                                  for r in range(1, top + 1)))

    def adaptive_speedup(self, up_to: int) -> TableSpeedup:
        """Relative throughput on 1 … `up_to` replicas of a job that adapts its batch size
        as AdaptDL does under Pollux (`adaptive_run_time`)."""
        return TableSpeedup(tuple((r, 1.0 / self.adaptive_run_time(r))
                                  for r in range(1, up_to + 1)))

    def adaptive_run_time(self, replicas: int) -> float:
        """The run time on `replicas` replicas of a job that picks its batch size for them:
        the fewest `steps(b) × step_time(replicas, b)` over the validated batch sizes `b`
        that can be split over `replicas`. A batch size's statistical efficiency is in its
        step count: the larger the batch, the more samples the training needs to reach the
        same progress (`validation-<b>.csv`)."""
        return min(self.run_time(replicas, b) for b in self.iterations
                   if replicas <= self.max_replicas(b))

    def _measured(self, replicas: int, local: float) -> tuple[float, float]:
        curve = self._curve(replicas)
        if curve is not None:
            return _interpolate(curve, local)
        known = sorted(r for r in self._replica_counts() if self._curve(r) is not None)
        i = bisect.bisect_left(known, replicas)
        if i == 0 or i == len(known):
            return _interpolate(self._curve(known[min(i, len(known) - 1)]) or (), local)
        lo, hi = known[i - 1], known[i]
        step_lo, sync_lo = _interpolate(self._curve(lo) or (), local)
        step_hi, sync_hi = _interpolate(self._curve(hi) or (), local)
        w = (replicas - lo) / (hi - lo)
        return step_lo + w * (step_hi - step_lo), sync_lo + w * (sync_hi - sync_lo)

    @cache  # noqa: B019 - applications are few and live as long as the process
    def _curve(self, replicas: int) -> Curve | None:
        curve = self.placements.get(_normalised(packed(replicas)))
        if curve is None:
            curve = self.scalability.get((math.ceil(replicas / GPUS_PER_NODE), replicas))
        return curve

    def _replica_counts(self) -> set[int]:
        return {sum(map(int, p)) for p in self.placements} | \
            {r for _, r in self.scalability}


def packed(replicas: int) -> str:
    """The placement binpacking gives `replicas` on 4-GPU nodes: `44…` then the rest."""
    full, rest = divmod(replicas, GPUS_PER_NODE)
    return str(GPUS_PER_NODE) * full + (str(rest) if rest else "")


def load_applications(directory: str | os.PathLike[str]) -> dict[str, Application]:
    """Every application under `directory` (`<app>/placements.csv` …)."""
    root = Path(directory)
    apps = {p.name: Application.load(p) for p in sorted(root.iterdir())
            if p.is_dir() and p.name in EPOCHS}
    if not apps:
        raise TraceError(os.fspath(root), None, None,
                         f"no application directories ({', '.join(sorted(EPOCHS))})")
    return apps


def _normalised(placement: str) -> str:
    """The lexicographically smallest rotation, as the artifact names placements."""
    digits = placement.strip().replace("0", "")
    return min((digits[i:] + digits[:i] for i in range(len(digits))), default=digits)


def _interpolate(curve: Sequence[tuple[float, float, float]], local: float
                 ) -> tuple[float, float]:
    xs = [p[0] for p in curve]
    i = bisect.bisect_left(xs, local)
    if i < len(xs) and xs[i] == local:
        return curve[i][1], curve[i][2]
    if i == 0:
        return curve[0][1], curve[0][2]
    if i == len(xs):
        return curve[-1][1], curve[-1][2]
    (x0, s0, y0), (x1, s1, y1) = curve[i - 1], curve[i]
    w = (local - x0) / (x1 - x0)
    return s0 + w * (s1 - s0), y0 + w * (y1 - y0)


def _rows(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise TraceError(os.fspath(path), 1, missing[0], "missing from the header")
            return [(line, row) for line, row in enumerate(reader, start=2)]
    except FileNotFoundError:
        raise TraceError(os.fspath(path), None, None, "no such file") from None


def _point(path: Path, line: int, row: Mapping[str, str]) -> tuple[float, float, float]:
    try:
        point = (float(row["local_bsz"]), float(row["step_time"]), float(row["sync_time"]))
    except ValueError:
        raise TraceError(os.fspath(path), line, None, f"not a number in {dict(row)}") from None
    if not all(math.isfinite(v) and v >= 0 for v in point) or point[1] <= 0:
        raise TraceError(os.fspath(path), line, None, f"expected positive times in {dict(row)}")
    return point
