"""The in-process baseline every benchmark divides by: these machines are shared and noisy,
so results are compared as ratios to this fixed pure-Python workload, timed in the same
process, rather than as raw seconds."""

from __future__ import annotations

import sys
import time


def calibration() -> float:
    """Seconds for a fixed workload of dict and tuple churn much like a cycle's."""
    start = time.perf_counter()
    table: dict[int, tuple[int, int]] = {}
    for i in range(300_000):
        table[i % 1_000] = (i, i * 2)
        sorted((i % 7, i % 3, i % 5))
    return time.perf_counter() - start


def cycle_ratios(cycle_s: float, calibration_s: float, tenth_size_s: float
                 ) -> dict[str, object]:
    """The keys every cycle benchmark prints beside its own: the calibration loop's time,
    the cycle's ratio to it, and how the cycle scales from a tenth of the size."""
    return {
        "calibration_seconds": round(calibration_s, 4),
        "cycle_vs_calibration": round(cycle_s / calibration_s, 3),
        "tenth_size_cycle_seconds": round(tenth_size_s, 4),
        "scaling_ratio": round(cycle_s / tenth_size_s, 2) if tenth_size_s else None,
        "python": sys.version.split()[0],
    }
