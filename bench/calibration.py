"""The in-process baseline every benchmark divides by: these machines are shared and noisy,
so results are compared as ratios to this fixed pure-Python workload, timed in the same
process, rather than as raw seconds."""

from __future__ import annotations

import time


def calibration() -> float:
    """Seconds for a fixed workload of dict and tuple churn much like a cycle's."""
    start = time.perf_counter()
    table: dict[int, tuple[int, int]] = {}
    for i in range(300_000):
        table[i % 1_000] = (i, i * 2)
        sorted((i % 7, i % 3, i % 5))
    return time.perf_counter() - start
