"""Core inserts run straight on the database driver's cursor, with the statement and the
parameters SQLAlchemy itself would send (issue 18): the batched submission path
(`Submissions.insert_new`) on SQLite.

SQLAlchemy's statement execution (its execution context, per-row parameter processing,
the result machinery, the `insertmanyvalues` batches) cost a burst's submission more CPU
than SQLite's own work. A `DriverInsert` is compiled once for a dialect and a set of
parameter names, and keeps what execution would do to each parameter set: the bound names
in the compiled order, each with the type's bind processor SQLAlchemy applies (JSON
serialised, booleans as integers ...), the columns' scalar Python defaults for the columns
not given, and the statement's constant binds (literals). The rows written are the same;
a test compares them with the Core path's, column by column.

Only what SQLAlchemy would not see goes around it: statement events. The transaction is
still SQLAlchemy's (`Engine.begin`: the write turn, `BEGIN IMMEDIATE`, commit and rollback
events), and the caller reports the job ids it wrote to the change feed itself
(`JobChanges.changed`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import ValuesBase

_Part = tuple[str | None, Callable[[Any], Any] | None, Any]
"""One positional parameter: the name read from a parameter set (None: a constant), the
bind processor applied to it, and the constant (already processed)."""


class DriverInsert:
    """`statement` (an insert, or an update whose columns and conditions are bound by name:
    `shoal.store.driver_writes`) compiled for `dialect` with `keys` as its parameter names
    (each parameter set gives exactly those), ready for a DBAPI cursor: `sql` and
    `row(params)`."""

    def __init__(self, statement: ValuesBase, dialect: Dialect, keys: Iterable[str]) -> None:
        given = frozenset(keys)
        compiled = statement.compile(dialect=dialect, column_keys=sorted(given))
        if not isinstance(compiled, SQLCompiler) or not compiled.positional \
                or compiled.positiontup is None or compiled.escaped_bind_names \
                or not _scalar_defaults(compiled.insert_prefetch):
            raise ValueError(f"{statement} cannot run on the driver as compiled for "
                             f"{dialect.name}")
        defaults = {column.key: column.default.arg  # type: ignore[union-attr]
                    for column in compiled.insert_prefetch}
        constants = compiled.construct_params({name: None for name in given})
        parts: list[_Part] = []
        for name in compiled.positiontup:
            process = compiled._bind_processors.get(name)
            if process is not None and not callable(process):  # a tuple's, per element
                raise ValueError(f"{statement}: {name} is bound as a tuple")
            if name in given:
                parts.append((name, process, None))
                continue
            value = defaults[name] if name in defaults else constants[name]
            parts.append((None, None, value if process is None else process(value)))
        self.sql: str = compiled.string
        self._parts = tuple(parts)

    def row(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """The positional parameters for one parameter set."""
        return tuple(constant if name is None
                     else params[name] if process is None else process(params[name])
                     for name, process, constant in self._parts)

    def rows(self, sets: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        """`row` of each parameter set, built a column at a time: one comprehension per
        parameter instead of a generator per row (a poll's exits and a cycle's binds are
        thousands of rows; building them row by row was most of `execute_many`)."""
        if len(sets) < 2:
            return [self.row(params) for params in sets]
        columns: list[list[Any]] = []
        for name, process, constant in self._parts:
            if name is None:
                columns.append([constant] * len(sets))
            elif process is None:
                columns.append([params[name] for params in sets])
            else:
                columns.append([process(params[name]) for params in sets])
        return list(zip(*columns, strict=True))


@functools.cache
def compiled_for(statement: ValuesBase, dialect: Dialect, keys: frozenset[str]
                 ) -> DriverInsert:
    """`DriverInsert(statement, dialect, keys)`, compiled once per process: the statements
    are module constants, and each engine has one dialect."""
    return DriverInsert(statement, dialect, keys)


def _scalar_defaults(columns: Iterable[Any]) -> bool:
    return all(column.default is not None and column.default.is_scalar for column in columns)
