"""What goes wrong in a job spec and how it is told: `SpecIssue`, `SpecError`, and the log
that gathers every issue of one load before anything is raised.

A load reports *all* its problems at once, each naming the file, the document (1-based, as a
person counts them in the file), the document's kind and name when they are known, and the
field path inside the document, so a user can fix a whole file in one pass.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


#: The longest message of one issue.
MAX_MESSAGE = 500
#: How much of a value or key a message or path quotes: a message never grows with the input.
QUOTED = 60


class _Quoter(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        # repr() of an integer of more than 4,300 digits raises, and a long one is unreadable.
        if x.bit_length() > 128:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_QUOTER = _Quoter()
_QUOTER.maxstring = _QUOTER.maxother = _QUOTER.maxlong = QUOTED
_QUOTER.maxlevel = 3


def quote(value: Any) -> str:
    """`repr(value)`, cut to a bounded prefix: error messages echo what was given, and what
    was given may be megabytes (or an alias bomb's expansion)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= QUOTED else f"{value[:QUOTED - 3]!r}..."
    try:
        text = _QUOTER.repr(value)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 2 * QUOTED else text[:2 * QUOTED - 3] + "..."


def join_path(base: str, key: str | int) -> str:
    """Extend a field path: `spec` + `taskGroups` → `spec.taskGroups`, + 0 → `…[0]`.

    A key that would read ambiguously after a dot (`nvidia.com/gpu`) is quoted in brackets,
    and a long one is cut (`quote`)."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    part = key if len(key) <= QUOTED and _PLAIN_KEY.match(key) else f"[{quote(key)}]"
    if not base:
        return part
    return f"{base}{part}" if part.startswith("[") else f"{base}.{part}"


@dataclass(frozen=True, slots=True)
class DocRef:
    """One document of a load: where it is and, when readable, what it declares."""

    source: str
    document: int
    """1-based position in its file; 0 means the file as a whole."""
    kind: str | None = None
    name: str | None = None

    def where(self) -> str:
        """`jobs.yaml document 3`, for messages that point at another document."""
        return f"{self.source} document {self.document}" if self.document else self.source


@dataclass(frozen=True, slots=True)
class SpecIssue:
    """One problem in a spec: where it is and what was expected."""

    source: str
    document: int
    kind: str | None
    name: str | None
    path: str
    message: str

    def __str__(self) -> str:
        parts = [self.source]
        if self.document:
            label = f"document {self.document}"
            if self.kind and self.name:
                label += f" ({self.kind} {self.name!r})"
            elif self.kind:
                label += f" ({self.kind})"
            parts.append(label)
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


class SpecError(Exception):
    """A load that failed; `issues` holds every problem found, in file order."""

    def __init__(self, issues: Sequence[SpecIssue]) -> None:
        if not issues:
            raise ValueError("a SpecError needs at least one issue")
        self.issues: list[SpecIssue] = list(issues)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)


@dataclass
class IssueLog:
    """Collects issues during a load; `raise_if_any` ends the load when something was wrong."""

    issues: list[SpecIssue] = field(default_factory=list)

    def add(self, doc: DocRef, path: str, message: str) -> None:
        # A safety net: messages quote bounded prefixes already (`quote`), but some quote
        # lists (allowed fields, declared queues) that grow with the cluster.
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE - 3] + "..."
        self.issues.append(SpecIssue(doc.source, doc.document, doc.kind, doc.name, path, message))

    def extend(self, issues: Iterable[SpecIssue]) -> None:
        self.issues.extend(issues)

    def __len__(self) -> int:
        return len(self.issues)

    def raise_if_any(self) -> None:
        if self.issues:
            raise SpecError(self.issues)
