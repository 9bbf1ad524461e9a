"""Benchmark: usage reports over a year of history on a 1,000-node cluster (issue 21's goal:
under a second).

Fills a SQLite store (a temporary file, the server's default backend) with `--days` of
hour buckets for `--nodes` nodes — one useful bucket per node and hour, and a preempted
one every 7th hour — plus their day and 30-day-period buckets, bulk-inserted in key order as
`shoal.store.accounting` would have summed them; then times what `GET /api/v1/usage`
does for a set of queries (the store's report, then its JSON text): a year by queue, by
user, by GPU type, by node, with and without a daily series; the last week by queue; the
last month hourly. Prints one JSON object: per query the process CPU seconds beside wall
seconds and the rows answered, and `year_by_queue_vs_hours_only_cpu`: the year by queue
against the same report read from the hour buckets alone (what the day buckets save), in
the same process.

    uv run python bench/usage.py [--nodes 1000] [--days 365]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from shoal.api.accounting import DAY, HOUR, GroupBy, Step, UsageQuery, report
from shoal.api.accounting_io import report_to_json
from shoal.store import Repository
from shoal.store.accounting import LEVELS, PERIOD, Level, _ranges, _sums
from shoal.store.engine import open_store

START = 1_767_225_600  # 2026-01-01T00:00:00Z
GPU_TYPES = ("a100", "h100", "v100")


def _key(node: int) -> tuple[str, str, str, str]:
    return f"team-{node % 12}", f"user-{node % 97}", GPU_TYPES[node % 3], f"node-{node:04d}"


def _hour_rows(nodes: int, days: int) -> Iterator[tuple[Any, ...]]:
    for h in range(days * 24):
        hour = START + h * HOUR
        for node in range(nodes):
            queue, user, gpu_type, name = _key(node)
            if h % 7 == node % 7:
                yield (hour, queue, user, gpu_type, name, "preempted", 0, 900.0, 450.0,
                       1.0e12)
            yield (hour, queue, user, gpu_type, name, "useful", 1, 8 * 2700.0, 3 * 3600.0,
                   5.0e13)


def _day_rows(nodes: int, days: int) -> Iterator[tuple[Any, ...]]:
    for d in range(days):
        for node in range(nodes):
            queue, user, gpu_type, name = _key(node)
            hours = [h for h in range(d * 24, d * 24 + 24) if h % 7 == node % 7]
            if hours:
                n = len(hours)
                yield (START + d * DAY, queue, user, gpu_type, name, "preempted", 0,
                       n * 900.0, n * 450.0, n * 1.0e12)
            yield (START + d * DAY, queue, user, gpu_type, name, "useful", 24, 24 * 8 * 2700.0,
                   24 * 3 * 3600.0, 24 * 5.0e13)


def fill(path: Path, nodes: int, days: int) -> int:
    """Bulk-insert the buckets straight through sqlite3 (the store's schema, migrated
    before); returns the hour rows written."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=OFF")
    columns = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    count = 0
    batch: list[tuple[Any, ...]] = []
    for row in _hour_rows(nodes, days):
        batch.append(row)
        if len(batch) == 100_000:
            connection.executemany(f"INSERT INTO usage_hours VALUES {columns}", batch)
            count += len(batch)
            batch.clear()
    connection.executemany(f"INSERT INTO usage_hours VALUES {columns}", batch)
    count += len(batch)
    day_rows = list(_day_rows(nodes, days))
    connection.executemany(f"INSERT INTO usage_days VALUES {columns}", day_rows)
    periods: dict[tuple[Any, ...], list[float]] = {}
    for day, *key, tasks, gpu, cpu, memory in day_rows:
        sums = periods.setdefault((day - day % PERIOD, *key), [0, 0.0, 0.0, 0.0])
        for i, value in enumerate((tasks, gpu, cpu, memory)):
            sums[i] += value
    connection.executemany(f"INSERT INTO usage_periods VALUES {columns}",
                           [(*key, *sums) for key, sums in sorted(periods.items())])
    connection.commit()
    connection.execute("ANALYZE")
    connection.close()
    return count


def timed(action: Callable[[], Any]) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def run(nodes: int, days: int) -> dict[str, object]:
    end = START + days * DAY
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "shoal.db"
        store = open_store(f"sqlite:///{path}")
        store.migrate()
        _, fill_cpu, fill_wall = timed(lambda: fill(path, nodes, days))
        repo = Repository(store)
        queries = {
            "year_by_queue": UsageQuery(GroupBy.QUEUE, START, end, Step.NONE),
            "year_by_queue_daily": UsageQuery(GroupBy.QUEUE, START, end, Step.DAY),
            "year_by_user": UsageQuery(GroupBy.USER, START, end, Step.NONE),
            "year_by_gpu_type_daily": UsageQuery(GroupBy.GPU_TYPE, START, end, Step.DAY),
            "year_by_node": UsageQuery(GroupBy.NODE, START, end, Step.NONE),
            "year_partial_days_by_queue": UsageQuery(GroupBy.QUEUE, START + 5 * HOUR + 1,
                                                     end - 7 * HOUR, Step.NONE),
            "last_week_by_queue": UsageQuery(GroupBy.QUEUE, end - 7 * DAY, end, Step.NONE),
            "last_month_by_queue_hourly": UsageQuery(GroupBy.QUEUE, end - 31 * DAY, end,
                                                     Step.HOUR),
        }
        out: dict[str, object] = {"nodes": nodes, "days": days,
                                  "fill": {"cpu_s": round(fill_cpu, 2),
                                           "wall_s": round(fill_wall, 2)}}
        results: dict[str, dict[str, object]] = {}
        for name, query in queries.items():
            def answer(query: UsageQuery = query) -> tuple[int, int]:
                data = report_to_json(repo.usage_report(query))
                return len(data["rows"]), len(json.dumps(data))
            (rows, size), cpu, wall = timed(answer)
            results[name] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "rows": rows,
                             "json_bytes": size}
        year = queries["year_by_queue"]

        def from_levels(levels: Sequence[Level]) -> Callable[[], int]:
            def read() -> int:
                with store.reads.begin() as s:
                    tallies = [t for level, first, last in _ranges(START, end, levels)
                               for t in _sums(s, level, first, last, year)]
                return len(report(year, tallies).rows)
            return read
        out["queries"] = results
        year_cpu = float(results["year_by_queue"]["cpu_s"])  # type: ignore[arg-type]
        for name, levels in (("days_and_hours", LEVELS[1::-1]), ("hours_only", LEVELS[:1])):
            _, cpu, wall = timed(from_levels(levels))
            out[f"{name}_year_by_queue"] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3)}
            out[f"year_by_queue_vs_{name}_cpu"] = round(year_cpu / cpu, 4) if cpu else None
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    args = parser.parse_args()
    print(json.dumps(run(args.nodes, args.days), indent=2))


if __name__ == "__main__":
    main()
