"""Reading the CSV traces: opening a file, checking its header, and reading one field with
an error that names the file, the line and the column.

Shared by the CSV loaders; no format knowledge lives here. Fields are parsed with plain
`float`/`int` on the hot path (tens of thousands of rows per trace) and only a failing field
pays for building a message.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from shoal.sim.trace import TraceError

#: Names of jobs (`^[a-zA-Z0-9_-]+$`) and of other objects, as the native spec requires.
JOB_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
OBJECT_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$")


@dataclass(frozen=True, slots=True)
class Table:
    """A CSV file read whole: the column index of each header name and the data rows, each
    with its 1-based line number in the file."""

    source: str
    columns: dict[str, int]
    rows: list[tuple[int, list[str]]]

    def index(self, name: str) -> int | None:
        return self.columns.get(name)


def read_table(path: str | os.PathLike[str], required: Sequence[str],
               optional: Sequence[str] = ()) -> Table:
    """Read `path`; every name in `required` must be in the header (in any order, other
    columns are ignored). Blank lines are skipped; a row with more or fewer fields than the
    header is an error."""
    source = os.fspath(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise TraceError(source, None, None, "the file is empty; expected a header "
                                 f"line with the columns {', '.join(required)}")
            header = [name.strip() for name in header]
            columns: dict[str, int] = {}
            for i, name in enumerate(header):
                if name in columns:
                    raise TraceError(source, 1, name, "appears twice in the header")
                columns[name] = i
            missing = [name for name in required if name not in columns]
            if missing:
                raise TraceError(
                    source, 1, missing[0],
                    f"missing from the header; expected the columns {', '.join(required)}"
                    + (f" (optional: {', '.join(optional)})" if optional else "")
                    + f", found {', '.join(header) or 'none'}")
            width = len(header)
            rows: list[tuple[int, list[str]]] = []
            for row in reader:
                if len(row) != width:
                    if not row:
                        continue  # a blank line
                    raise TraceError(
                        source, reader.line_num,
                        header[len(row)] if len(row) < width else None,
                        f"the row has {len(row)} fields but the header has {width}")
                rows.append((reader.line_num, row))
    except FileNotFoundError:
        raise TraceError(source, None, None, "no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TraceError(source, None, None, f"cannot read the file: {exc}") from exc
    return Table(source, columns, rows)


def _shown(text: str) -> str:
    return "an empty field" if not text.strip() else repr(text)


def number(source: str, line: int, column: str, text: str, *, positive: bool = False) -> float:
    """A finite number, >= 0 (> 0 when `positive`)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "a positive number" if positive else "a non-negative number"
        raise TraceError(source, line, column, f"must be {kind}, got {_shown(text)}")
    return value


def count(source: str, line: int, column: str, text: str, *, minimum: int = 0,
          maximum: int | None = None) -> int:
    """A whole number in [minimum, maximum]; `8` and `8.0` are both read as 8."""
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise TraceError(source, line, column,
                             f"must be a whole number, got {_shown(text)}") from None
        value = int(as_float)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"at least {minimum}" if maximum is None else \
            f"between {minimum} and {maximum}"
        raise TraceError(source, line, column, f"must be {bound}, got {text.strip()}")
    return value


def job_name(source: str, line: int, column: str, text: str) -> str:
    """A job name: letters, digits, '_' and '-'."""
    if not JOB_NAME.match(text):
        raise TraceError(source, line, column, "must be a job name (letters, digits, '_' "
                         f"and '-' only), got {_shown(text)}")
    return text


def object_name(source: str, line: int, column: str, text: str) -> str:
    """A virtual cluster or node name: letters, digits, '.', '_' and '-', starting and
    ending with a letter or digit."""
    if not OBJECT_NAME.match(text):
        raise TraceError(source, line, column, "must be a name of letters, digits, '.', '_' "
                         "and '-', starting and ending with a letter or digit, got "
                         f"{_shown(text)}")
    return text
