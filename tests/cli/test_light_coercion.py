"""`shoal.cli.coercion` converts a parameter's value as typer's pydantic adapter does, or
leaves it to that adapter: the same command, run with typer's own coercion and with the
light one, prints the same values (types included), the same errors and exit codes, over
generated command lines."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer import _coercion, core
from typer.testing import CliRunner

from shoal.cli.coercion import install, light_runtime_param
from shoal.cli.main import light_coercion

runner = CliRunner()


class Colour(StrEnum):
    RED = "red"
    DARK_BLUE = "dark-blue"


def probe(
    count: Annotated[int, typer.Option("--count", min=1, max=1000)] = 10,
    ratio: Annotated[float | None, typer.Option("--ratio", min=0.0)] = None,
    free: Annotated[int | None, typer.Option("--free")] = None,
    clamped: Annotated[int | None, typer.Option("--clamped", min=0, max=9, clamp=True)] = None,
    name: Annotated[str | None, typer.Option("--name")] = None,
    colour: Annotated[Colour, typer.Option("--colour", case_sensitive=False)] = Colour.RED,
    exact: Annotated[Colour | None, typer.Option("--exact")] = None,
    mode: Annotated[Literal["a", "b"] | None, typer.Option("--mode")] = None,
    path: Annotated[Path | None, typer.Option("--path")] = None,
    existing: Annotated[Path | None, typer.Option("--existing", exists=True,
                                                  dir_okay=False)] = None,
    resolved: Annotated[Path | None, typer.Option("--resolved", resolve_path=True,
                                                  allow_dash=True)] = None,
    numbers: Annotated[list[int] | None, typer.Option("--number")] = None,
    flag: Annotated[bool, typer.Option("--flag/--no-flag", envvar="PROBE_FLAG")] = False,
) -> None:
    values = (count, ratio, free, clamped, name, colour, exact, mode, path, existing, resolved,
              numbers, flag)
    typer.echo(repr([(type(v).__name__, v) for v in values]))


def run(args: list[str], env: dict[str, str], light: bool) -> tuple[int, str]:
    """`probe ARGS…` on typer's coercion or the light one: its exit code and output."""
    saved = core.build_runtime_param  # type: ignore[attr-defined]
    core.build_runtime_param = (  # type: ignore[attr-defined]
        light_runtime_param if light else _coercion.build_runtime_param)
    try:
        app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        app.command()(probe)
        result = runner.invoke(app, args, env=env)
    finally:
        core.build_runtime_param = saved  # type: ignore[attr-defined]
    return result.exit_code, result.output


NUMBERS = st.one_of(
    st.integers(-5, 2000).map(str),
    st.sampled_from(["007", "+5", " 5", "5 ", "5_0", "1.0", "1.5", "-0", "0.0", ".5", "5.",
                     "1e3", "nan", "inf", "-inf", "٣", "", "x", "9" * 40, "1_000.5"]),
    st.floats(allow_nan=True).map(repr),
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
CHOICES = st.sampled_from(["red", "RED", "Red", "dark-blue", "DARK-BLUE", "dark_blue", "blue",
                           "", "a", "b", "A"])
PATHS = st.sampled_from(["", ".", "-", "file.txt", "missing", "dir", "a b", "~/x"])


def option(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(values, max_size=2).map(lambda vs: [part for v in vs
                                                         for part in (name, v)])


ARGS = st.tuples(
    option("--count", NUMBERS), option("--ratio", NUMBERS), option("--free", NUMBERS),
    option("--clamped", NUMBERS), option("--name", TEXT), option("--colour", CHOICES),
    option("--exact", CHOICES), option("--mode", CHOICES), option("--path", PATHS),
    option("--existing", PATHS), option("--resolved", PATHS), option("--number", NUMBERS),
    st.sampled_from([[], ["--flag"], ["--no-flag"]]),
).map(lambda parts: [arg for part in parts for arg in part])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("coercion")
    (where / "file.txt").write_text("x")
    (where / "dir").mkdir()
    return where


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=ARGS, flag_env=st.sampled_from([None, "1", "no", "", "maybe"]))
def test_light_coercion_gives_what_typer_s_gives(workdir: Path, args: list[str],
                                                 flag_env: str | None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    env = {} if flag_env is None else {"PROBE_FLAG": flag_env}
    assert run(args, env, light=True) == run(args, env, light=False)


def test_the_usual_values_need_no_pydantic(workdir: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the light path converts these itself (typer's would
    build an adapter for each), and gets what typer gets."""
    monkeypatch.chdir(workdir)
    built: list[object] = []

    def counting(descriptor: _coercion.TypeDescriptor) -> _coercion.RuntimeParam:
        built.append(descriptor.annotation)
        return original(descriptor)

    original = _coercion.build_runtime_param
    monkeypatch.setattr(_coercion, "build_runtime_param", counting)
    args = ["--count", "12", "--ratio", "0.5", "--name", "x", "--colour", "DARK-BLUE",
            "--mode", "b", "--path", "dir", "--existing", "file.txt", "--number", "3",
            "--number", "4", "--flag"]
    light = run(args, {}, light=True)
    assert light[0] == 0 and "('int', 12)" in light[1] and "('PosixPath'," in light[1]
    # typer's own runtime parameters only for what the light path never converts (the
    # clamped integer), none for the values it converted
    assert built == [int]
    assert light == run(args, {}, light=False)


def test_install_hooks_the_locked_typer() -> None:
    assert light_coercion() and install()
    assert core.build_runtime_param is light_runtime_param  # type: ignore[attr-defined]
