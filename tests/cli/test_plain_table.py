"""`shoal.cli.plain_table` prints a table as rich prints it to a pipe: over generated
tables, its lines are those of rich's `remote_render` layout on an unstyled full-width
console, wherever it does not leave the table to rich."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from shoal.cli.plain_table import lines, unstyled
from shoal.cli.remote_render import _table
from shoal.cli.remote_support import FULL_WIDTH

CELLS = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=14),
    st.sampled_from(["", " ", "  x ", "a  b", "[bold]x[/]", ":fire:", "-", "0/1"]),
    st.text(max_size=4),  # anything: tabs, newlines, wide or combining characters …
)


def rich_lines(headers: list[str], rows: list[list[str]]) -> str:
    """What `out()` prints for `remote_render`'s table in a pipe."""
    table = _table(None, *headers)
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    console = Console(file=buffer, highlight=False, soft_wrap=True, emoji=False,
                      width=FULL_WIDTH, _environ={})
    console.print(table)
    return buffer.getvalue()


@settings(max_examples=120, deadline=None)
@given(data=st.data(), columns=st.integers(1, 5), count=st.integers(0, 6))
def test_plain_lines_are_rich_s(data: st.DataObject, columns: int, count: int) -> None:
    headers = data.draw(st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126),
                                         min_size=1, max_size=8),
                                 min_size=columns, max_size=columns))
    rows = data.draw(st.lists(st.lists(CELLS, min_size=columns, max_size=columns),
                              min_size=count, max_size=count))
    plain = lines(headers, rows)
    if plain is not None:
        assert plain == rich_lines(headers, rows)


def test_the_usual_table_is_printed_plain() -> None:
    """The comparison above can fail: a jobs-like table is printed here, not by rich, and
    text rich would change (markup aside, which `remote_render`'s cells are not) is not."""
    headers = ["NAME", "STATE", "WAITING BECAUSE"]
    rows = [["train-1", "Running", ""], ["sweep-22", "Pending", "needs 8 gpu, 2 free"]]
    assert lines(headers, rows) == rich_lines(headers, rows) == (
        "NAME      STATE    WAITING BECAUSE    \n"
        "train-1   Running  " + " " * 19 + "\n"
        "sweep-22  Pending  needs 8 gpu, 2 free\n")
    assert lines(headers, [["tab\there", "x", "y"]]) is None
    assert lines(headers, [["日本", "x", "y"]]) is None
    assert lines(headers, [["[bold]x", "x", "y"]]) is None
    assert lines(headers, []) is None


def test_a_terminal_or_a_forced_colour_is_left_to_rich(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert unstyled(io.StringIO()) and not unstyled(Terminal())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not unstyled(io.StringIO())
