"""Typer's parameter coercion without pydantic for the values a command line usually holds.

typer (0.29) coerces every parameter's value through a pydantic `TypeAdapter` built when the
command runs: importing pydantic and building the adapters was a third of a `shoal jobs`'
CPU. `install()` puts `light_runtime_param` in front of typer's `build_runtime_param`: for a
string, a flag, an integer or a float (with typer's `min`/`max`), a choice (an Enum or a Literal),
a path, or a list of these, a value of the usual shape — digits for an integer, a plain
decimal for a float, a choice as named, a string for a path — is converted here, to what
the adapter makes of it. Anything else (an unusual spelling such as `1_000` or ` 5`, an
out-of-range number, a bad choice, a `parser=`, a date, a file …) goes to typer's own
adapter, built then, so values and error messages stay exactly typer's;
`tests/cli/test_light_coercion.py` compares the two over generated input.

The hook is typer's private `typer.core.build_runtime_param`: `install()` patches only the
typer releases it was checked against (`TYPER_VERSIONS`); under any other the CLI runs on
typer's own path — slower (`tests/cli/test_light_imports.py` fails, naming pydantic), never
wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import typer
from typer import _coercion, core
from typer._param_types import (
    choice_coercion_annotation,
    coerce_cli_choice,
    coerce_cli_path,
    routes_to_path,
)

if TYPE_CHECKING:
    from typer._click import Context
    from typer._coercion import TypeDescriptor
    from typer.core import _TyperParameter

#: The typer releases whose private coercion API `install` was written against.
TYPER_VERSIONS = ("0.29.",)

#: What `int(...)` reads exactly as pydantic does (ASCII digits: `int` also takes other
#: scripts' digits, pydantic does not); the bound on the length keeps `int` linear.
_INT = re.compile(r"-?[0-9]{1,30}")
#: A plain decimal, read alike by `float` and pydantic.
_FLOAT = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?")

Kind = Literal["str", "bool", "int", "float", "choice", "path"]


class DeclinedError(Exception):
    """This value is for typer's own path to judge."""


@dataclass(frozen=True)
class Leaf:
    """How one value (an item, for a list) of a parameter is converted here."""

    kind: Kind
    descriptor: TypeDescriptor
    annotation: Any

    def convert(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        """The value typer's adapter would give; DeclinedError where it is unsure."""
        info = self.descriptor.parameter_info
        if self.kind in ("str", "bool"):
            if type(value) is (str if self.kind == "str" else bool):
                return value
        elif self.kind in ("int", "float"):
            number = self._number(value)
            if ((info.min is None or number >= info.min)
                    and (info.max is None or number <= info.max)):
                return number
        elif self.kind == "choice":
            return self._choice(value, ctx)
        elif type(value) is str or isinstance(value, Path):
            return self._path(value, param, ctx)
        raise DeclinedError

    def _number(self, value: Any) -> float:
        if self.kind == "int":
            if type(value) is int:
                return value
            if type(value) is str and _INT.fullmatch(value):
                return int(value)
        else:
            if type(value) is float:
                return value
            if type(value) is str and _FLOAT.fullmatch(value):
                return float(value)
        raise DeclinedError

    def _choice(self, value: Any, ctx: Context) -> Any:
        found = choice_coercion_annotation(self.annotation, self.descriptor.parameter_info)
        assert found is not None  # only choices are given this kind
        choices, case_sensitive = found
        try:
            return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive,
                                     ctx=ctx)
        except ValueError:  # typer's adapter words it
            raise DeclinedError from None

    def _path(self, value: str | Path, param: _TyperParameter, ctx: Context) -> Any:
        info = self.descriptor.parameter_info
        path_type: type[Any] | None = info.path_type
        if path_type is None and isinstance(self.annotation, type) and issubclass(
                self.annotation, Path):
            path_type = self.annotation
        if not (isinstance(path_type, type) and issubclass(path_type, Path)):
            return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)
        if isinstance(value, path_type):
            return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)
        if not isinstance(value, str) or info.allow_dash:
            raise DeclinedError  # typer's path reads "-" apart only on a string
        # The path pydantic's validator makes of a string, as typer asks it to. typer checks
        # that path and names the string in its messages: both are the same only where the
        # path reads back as the string ('' is '.', 'a//b' is 'a/b').
        made = path_type(value)
        if str(made) != value:
            raise DeclinedError
        checked = coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx)
        assert isinstance(checked, str)  # the string, or its real path (`resolve_path`)
        return made if checked is value else path_type(checked)


def leaf_of(descriptor: TypeDescriptor, annotation: Any) -> Leaf | None:
    """How a value annotated `annotation` is converted here, or None where only typer's
    adapter does it."""
    info = descriptor.parameter_info
    if info.parser is not None:
        return None
    if choice_coercion_annotation(annotation, info) is not None:
        return Leaf("choice", descriptor, annotation)
    if get_origin(annotation) is not None:
        return None
    if annotation is str or annotation is bool:
        return Leaf("str" if annotation is str else "bool", descriptor, annotation)
    if annotation is int or annotation is float:
        return None if info.clamp else Leaf(
            "int" if annotation is int else "float", descriptor, annotation)
    if routes_to_path(annotation, info):
        return Leaf("path", descriptor, annotation)
    return None


@dataclass(frozen=True)
class LightParam(_coercion.RuntimeParam):
    """Converts a value here; typer's own runtime parameter, built on first need, converts
    what this declines."""

    descriptor: TypeDescriptor | None = None
    leaf: Leaf | None = None
    many: bool = False

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        assert self.leaf is not None
        try:
            if not self.many:
                return self.leaf.convert(value, param, ctx)
            items = value if isinstance(value, (list, tuple)) else [value]
            return [self.leaf.convert(item, param, ctx) for item in items]
        except DeclinedError:
            return self.typer_param._coerce_value(value, param=param, ctx=ctx)

    @cached_property
    def typer_param(self) -> _coercion.RuntimeParam:
        """typer's runtime parameter (a pydantic adapter's) for the same descriptor."""
        assert self.descriptor is not None
        return _coercion.build_runtime_param(self.descriptor)


def light_runtime_param(descriptor: TypeDescriptor) -> _coercion.RuntimeParam:
    """A runtime parameter converting the usual values here and the rest on typer's path
    (typer's own, where no value of the parameter would be converted here)."""
    annotation = descriptor.annotation
    many = descriptor.is_list
    leaf = None if descriptor.file_annotation is not None else leaf_of(
        descriptor, get_args(annotation)[0] if many else annotation)
    if leaf is None:
        return _coercion.build_runtime_param(descriptor)
    return LightParam(parameter_info=descriptor.parameter_info, annotation=annotation,
                      descriptor=descriptor, leaf=leaf, many=many)


def install() -> bool:
    """Route typer's coercion through `light_runtime_param`; False, changing nothing, under
    a typer this was not written against."""
    current = getattr(core, "build_runtime_param", None)
    if current is light_runtime_param:
        return True
    if not typer.__version__.startswith(TYPER_VERSIONS) or (
            current is not _coercion.build_runtime_param):
        return False
    core.build_runtime_param = light_runtime_param  # type: ignore[attr-defined]
    return True
