"""A task's whole log on the Ray engine: its attempts' output, from whichever nodes ran them.

Each attempt of a task runs on the node Shoal chose, through that node's local executor,
which appends the output of every attempt it ran to one file per stream
(`LocalExecutor.log_paths`) and records, durably and before the attempt's process starts,
where its output begins there (`local.LOG_START_FILE`: the files' sizes then). So a task's
log is the concatenation, in attempt order, of one **segment** per attempt: on the node of
the attempt, from its start to the start of the next attempt that ran on the same node, or
to that file's end when none did. Consecutive attempts on one node are contiguous there and
are read together. An attempt that never started on its node (its node was dead, its
launch refused) has an empty segment.

**Offsets are stable.** A segment can grow only while it is the task's latest attempt:
once a later attempt is placed (`<root>/placements/...`, written before it starts), the
earlier one has ended. The control plane then measures the segment's length once (on its
node) and keeps it with the placements (`log-<stream>.json` in the task's placements
directory), so what follows keeps its offsets even if that node later dies. Of the latest
attempt it keeps the most it has seen of the segment (`seen`, in `log-<stream>.seen.json`):
should its node die, that is the segment's length. A segment whose node died before any of
it was measured or seen counts as empty.

**A dead node's bytes are lost, not their offsets.** A read inside the segment of a node
that is gone (or that no longer has the file: a new disk under the same name) skips to the
next segment and returns its bytes with `LogChunk.offset` where they start, so a follower
that goes on from `LogChunk.next_offset` sees every byte still readable, each at the offset
it always had.

**Reads are cheap.** A read asks one node for its bytes (a short pinned Ray task); once the
segments before the latest one are measured — at the first read after each new attempt,
one pinned task per node that holds unmeasured ones, all at once — that is all a read costs
(a dead node costs none: Ray is not asked to run anything there). A node that is slow to
answer makes the read return nothing now (the follower asks again), and nothing is
concluded from it.

The control plane's side is `TaskLogs`; what runs on a node is `layout` and `read_segment`
(called by `ray_worker.on_node`). Nothing here imports Ray.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal.executors.contract import MAX_LOG_READ, LogChunk, LogStream
from shoal.executors.local import LocalExecutor
from shoal.executors.wrapper import LOG_START_FILE, PID_FILE, STATUS_FILE

# ---- on a node ------------------------------------------------------------------------------


def _start_of(local: LocalExecutor, job: str, group: str, index: int, attempt: int,
              stream: LogStream) -> int | None:
    """Where the attempt's output begins in the node's log of `stream`; None when the
    attempt never started on this node."""
    task_dir = local.task_dir(job, group, index, attempt)
    try:
        data = json.loads((task_dir / LOG_START_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        # Started (a pid or an outcome recorded) with no start: launched by a Shoal that
        # recorded none. Its output, and that of earlier such attempts on this node, is all
        # it: shown whole, in the node's order, rather than not at all.
        started = (task_dir / PID_FILE).exists() or (task_dir / STATUS_FILE).exists()
        return 0 if started else None
    value = data.get(stream) if isinstance(data, dict) else None
    return value if isinstance(value, int) and value >= 0 else None


def _log_path(local: LocalExecutor, job: str, group: str, index: int,
              stream: LogStream) -> Path:
    out, err = local.log_paths(job, group, index)
    return out if stream == "stdout" else err


def layout(local: LocalExecutor, job: str, group: str, index: int, stream: LogStream,
           attempts: Sequence[int]) -> tuple[int, dict[int, int | None]]:
    """The size of the node's log of `stream`, then where each of `attempts` begins in it
    (None: it never started here). The size is taken first: an attempt whose start record
    is not there yet had written nothing when the size was taken, so the size never counts
    its output in an earlier attempt's segment."""
    try:
        size = _log_path(local, job, group, index, stream).stat().st_size
    except FileNotFoundError:
        size = 0
    return size, {a: _start_of(local, job, group, index, a, stream) for a in attempts}


def read_segment(local: LocalExecutor, job: str, group: str, index: int, stream: LogStream,
                 attempt: int, delta: int, limit: int) -> tuple[int | None, bytes]:
    """Where `attempt` begins on this node, and at most `limit` bytes of the node's log from
    `delta` bytes after that (nothing when it never started here)."""
    start = _start_of(local, job, group, index, attempt, stream)
    if start is None:
        return None, b""
    try:
        with _log_path(local, job, group, index, stream).open("rb") as handle:
            handle.seek(start + delta)
            return start, handle.read(max(0, limit))
    except FileNotFoundError:
        return start, b""


# ---- on the control plane -------------------------------------------------------------------


class Late:
    """A node's answer did not come in time (nothing is concluded from it)."""


class Gone:
    """A node is gone: unknown to Ray, dead, or it refused work."""


LATE, GONE = Late(), Gone()
#: What `Ask` answers for one node: the op's result, LATE or GONE.
Answer = Any
#: Run, at once, one op of `ray_worker.on_node` on each node named: node → (op, args).
Ask = Callable[[Mapping[str, tuple[str, tuple[Any, ...]]]], dict[str, Answer]]


@dataclass(frozen=True, slots=True)
class _Segment:
    attempt: int
    node: str
    length: int | None
    """Its final length; None for the latest attempt (it may grow) or one not measured."""


class TaskLogs:
    """Reads tasks' logs across the nodes their attempts ran on (the module docstring).
    `placements(job, group, index)`: the task's attempts in order, with their nodes, and
    the directory where the control plane keeps what it measured of them."""

    def __init__(self, placements: Callable[[str, str, int], tuple[list[tuple[int, str]], Path]],
                 ask: Ask) -> None:
        self._placements = placements
        self._ask = ask
        # One read at a time merges its findings into a task's record (server threads and
        # the event loop read concurrently): nothing measured is ever lost to a race.
        self._lock = threading.Lock()

    def read(self, job: str, group: str, index: int, stream: LogStream, offset: int,
             limit: int) -> LogChunk:
        limit = max(0, min(limit, MAX_LOG_READ))
        attempts, directory = self._placements(job, group, index)
        if not attempts or limit == 0:
            return LogChunk(b"", offset)
        record_path = directory / f"log-{stream}.json"
        record = _load(record_path)
        latest = attempts[-1][0]
        self._measure(job, group, index, stream, attempts, record)
        segments = [_Segment(a, node, None if a == latest else _length(record, a))
                    for a, node in attempts]
        try:
            return self._read(job, group, index, stream, segments, record, offset, limit)
        finally:
            self._save(record_path, record)

    def _measure(self, job: str, group: str, index: int, stream: LogStream,
                 attempts: list[tuple[int, str]], record: dict[str, Any]) -> None:
        """Measure, once, the segments that no longer grow: one pinned task per node that
        holds unmeasured ones; a node that is gone gives each its `seen` length."""
        latest = attempts[-1][0]
        wanted = {node for a, node in attempts if a != latest and _length(record, a) is None}
        if not wanted:
            return
        on_node: dict[str, list[int]] = {}
        for a, node in attempts:
            on_node.setdefault(node, []).append(a)
        answers = self._ask({node: ("log_layout", (job, group, index, stream, on_node[node]))
                             for node in sorted(wanted)})
        for node in sorted(wanted):
            answer = answers.get(node, LATE)
            mine = on_node[node]
            if answer is GONE:
                for a in mine:
                    if a != latest and _length(record, a) is None:
                        _entry(record, a)["length"] = _entry(record, a).get("seen", 0)
                continue
            if isinstance(answer, Late):
                continue
            size, starts = answer
            for position, a in enumerate(mine):
                if a == latest or _length(record, a) is not None:
                    continue
                start = starts.get(a)
                later = [s for b in mine[position + 1:] if (s := starts.get(b)) is not None]
                end = later[0] if later else size
                # max(): a segment never shrinks below what a reader already saw of it.
                _entry(record, a)["length"] = max(
                    0 if start is None else max(0, end - start), _entry(record, a).get("seen", 0))

    def _read(self, job: str, group: str, index: int, stream: LogStream,
              segments: list[_Segment], record: dict[str, Any], offset: int, limit: int
              ) -> LogChunk:
        position = 0
        i = 0
        while i < len(segments):
            segment = segments[i]
            if segment.length is None and segment.attempt != segments[-1].attempt:
                return LogChunk(b"", offset)  # not measured yet (its node was slow)
            if segment.length is not None and offset >= position + segment.length:
                position += segment.length
                i += 1
                continue
            # `offset` is in this segment: read it and those after it on the same node,
            # contiguous there.
            run = [segment]
            while i + len(run) < len(segments) and segments[i + len(run)].node == segment.node:
                run.append(segments[i + len(run)])
            lengths = [s.length for s in run]
            bounded = all(n is not None for n in lengths)
            run_length = sum(n for n in lengths if n is not None)
            delta = offset - position
            want = min(limit, run_length - delta) if bounded else limit
            answer = self._ask({segment.node: (
                "read_segment", (job, group, index, stream, segment.attempt, delta, want))}
            ).get(segment.node, LATE)
            if isinstance(answer, Late) or (isinstance(answer, Gone) and not bounded):
                return LogChunk(b"", offset)
            if not isinstance(answer, Gone):
                start, data = answer
                if start is not None and (data or not bounded):
                    if not bounded:  # the latest attempt's bytes seen so far
                        before = sum(n for n in lengths[:-1] if n is not None)
                        entry = _entry(record, run[-1].attempt)
                        entry["seen"] = max(entry.get("seen", 0), delta + len(data) - before)
                    return LogChunk(data, offset)
                if start is None and not bounded:
                    return LogChunk(b"", offset)  # the latest attempt has not started yet
            # The run's bytes are lost (its node is gone, or no longer has them): the read
            # goes on at the next segment, whose offsets are what they always were.
            position += run_length
            offset = position
            i += len(run)
        return LogChunk(b"", offset)

    def _save(self, path: Path, found: dict[str, Any]) -> None:
        """Merge what this read found into the task's record: a length never changes once
        known, `seen` only grows. Lengths are kept durably (they must outlive the node
        they measured); `seen`, which grows at every read of a growing log, in a file of
        its own, not worth an fsync each time."""
        if not found:
            return
        with self._lock:
            record = _load(path)
            changed: set[str] = set()
            for attempt, entry in found.get("attempts", {}).items():
                mine = record.setdefault("attempts", {}).setdefault(attempt, {})
                for key, value in entry.items():
                    new = max(mine.get(key, 0), value) if key == "seen" \
                        else mine.get(key, value)
                    if mine.get(key) != new:
                        mine[key] = new
                        changed.add(key)
            if not path.parent.is_dir():  # a forgotten job keeps no record
                return
            with contextlib.suppress(FileNotFoundError):  # forgotten meanwhile
                for key in sorted(changed & {"length", "seen"}):
                    _write(_file(path, key), _only(record, key), durable=key == "length")


def _file(path: Path, key: str) -> Path:
    return path if key == "length" else path.with_suffix(".seen.json")


def _only(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {"attempts": {a: {key: e[key]} for a, e in record.get("attempts", {}).items()
                         if key in e}}


def _load(path: Path) -> dict[str, Any]:
    """The task's record of one stream: its lengths and what was seen, merged."""
    record: dict[str, Any] = {"attempts": {}}
    for key in ("length", "seen"):
        try:
            data = json.loads(_file(path, key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        attempts = data.get("attempts") if isinstance(data, dict) else None
        for attempt, entry in (attempts or {}).items():
            value = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(value, int):
                record["attempts"].setdefault(str(attempt), {})[key] = value
    return record


def _entry(record: dict[str, Any], attempt: int) -> dict[str, Any]:
    entry: dict[str, Any] = record.setdefault("attempts", {}).setdefault(str(attempt), {})
    return entry


def _length(record: dict[str, Any], attempt: int) -> int | None:
    value = record.get("attempts", {}).get(str(attempt), {}).get("length")
    return value if isinstance(value, int) else None


def _write(path: Path, record: dict[str, Any], *, durable: bool) -> None:
    """Atomically (a temporary file of a name no other writer uses, then renamed), 0600;
    `durable`: fsync'd before the rename, as what it says must outlive the node it measured."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
