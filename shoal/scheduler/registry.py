"""Registries of actions and plugins by name. A name can be registered once: a second
registration is an error, so two plugins can never silently shadow each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

T = TypeVar("T")


class DuplicateNameError(ValueError):
    """A second registration under a name already taken."""


class UnknownNameError(KeyError):
    """A profile names an action or plugin nobody registered."""

    def __str__(self) -> str:
        return str(self.args[0])


class Arguments(BaseModel):
    """Base of every action's and plugin's arguments: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


A = TypeVar("A", bound=Arguments)


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, tuple[type[Arguments], Callable[[Any], T]]] = {}

    def register(self, name: str, arguments: type[A], factory: Callable[[A], T]) -> None:
        if name in self._factories:
            raise DuplicateNameError(f"{self.kind} {name!r} is already registered")
        self._factories[name] = (arguments, factory)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, name: str, arguments: Mapping[str, Any] | None = None) -> T:
        try:
            model, factory = self._factories[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: "
                              f"{', '.join(self.names())}") from None
        try:
            parsed = model.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors())
            raise ValueError(f"{self.kind} {name!r} arguments: {problems}") from None
        return factory(parsed)
