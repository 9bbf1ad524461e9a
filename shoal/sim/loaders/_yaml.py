"""Reading the YAML files of the simulator (native traces, cluster descriptions) with line
numbers, and turning the spec layer's `SpecError` into a `TraceError` that names the line.

The spec layer (`shoal.spec`) owns the schema and reports issues by document and field
path; this module only finds where in the file that document and field are, so that a
trace's errors read like its CSV errors: `trace.yaml:12: field 'spec.queue': …`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from shoal.sim.trace import TraceError
from shoal.spec import SpecError
from shoal.spec.reading import StrictLoader


def read_text(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(source, text) of a UTF-8 file; a missing or unreadable file is a `TraceError`."""
    source = os.fspath(path)
    try:
        return source, Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(source, None, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(source, None, None, f"cannot read the file: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document: its number (1-based), its node tree (for lines) and its data."""

    number: int
    node: yaml.Node
    data: Any

    @property
    def line(self) -> int:
        return self.node.start_mark.line + 1

    def line_of(self, path: str) -> int:
        """The line of the field at `path` (`spec.taskGroups[0].resources`), or of the
        deepest part of it that exists."""
        return _line_of(self.node, path)


def documents(source: str, text: str) -> list[Document]:
    """Every document of `text`, empty ones included (as null data) so that numbering
    matches the spec loader's; invalid YAML is a `TraceError` at its line."""
    loader = StrictLoader(text)
    out: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            out.append(Document(len(out) + 1, node, loader.construct_document(node)))
    except yaml.YAMLError as exc:
        line = None
        what = str(exc)
        if isinstance(exc, yaml.MarkedYAMLError):
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            what = exc.problem or exc.context or "cannot parse"
        raise TraceError(source, line, None, f"invalid YAML: {what}") from exc
    finally:
        loader.dispose()
    return out


def document_lines(text: str) -> dict[int, yaml.Node]:
    """Best effort: document number → node, for files the spec loader reads itself; a file
    that does not parse gives what was read before the problem."""
    loader = yaml.SafeLoader(text)
    out: dict[int, yaml.Node] = {}
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover
                break
            out[len(out) + 1] = node
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    return out


#: One step of a spec field path: `.name`, `[0]` or `['nvidia.com/gpu']`.
_PATH_PART = re.compile(
    r"\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")


def _line_of(node: yaml.Node, path: str) -> int:
    current = node
    position = 0
    while position < len(path):
        match = _PATH_PART.match(path, position)
        if match is None:
            break
        position = match.end()
        name, index, quoted = match.groups()
        child: yaml.Node | None = None
        if index is not None and isinstance(current, yaml.SequenceNode):
            items = current.value
            child = items[int(index)] if int(index) < len(items) else None
        elif index is None and isinstance(current, yaml.MappingNode):
            key = name if name is not None else quoted[1:-1]
            child = next((v for k, v in current.value
                          if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if child is None:
            break
        current = child
    return int(current.start_mark.line) + 1


def spec_error(source: str, exc: SpecError, nodes: dict[int, yaml.Node]) -> TraceError:
    """The first issue as a `TraceError` at its line, the others listed after it."""
    errors: list[TraceError] = []
    for issue in exc.issues:
        node = nodes.get(issue.document)
        line = None if node is None else _line_of(node, issue.path)
        errors.append(TraceError(issue.source, line, issue.path or None, issue.message,
                                 what="field"))
    head = errors[0]
    if len(errors) == 1:
        return head
    rest = "\n".join(str(e) for e in errors[1:])
    return TraceError(head.source, head.line, head.column,
                      f"{head.message}\nand {len(errors) - 1} more:\n{rest}", what="field")
