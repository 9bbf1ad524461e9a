"""Job arrays: one document that stands for N jobs, `<name>-<i>` for each index `i`.

The index expression is Slurm's `--array` syntax, which a batch script's header and a native
Job's `spec.array` share: `0-9`, `1,3,5`, `0-15:4` (every 4th) and mixes (`0-3,8,10-20:5`).
Slurm's `%N` throttle (at most N elements running at once) is refused: Shoal has no
"at most N of these" rule, and chaining the elements with afterok dependencies would cancel
the rest of the array when one element fails, which the throttle does not.

The size of an array is computed from the expression before anything is expanded, and it is
bounded (`MAX_ARRAY_JOBS`), as are the indices, the expression's length and the size of all
the elements together (`array_size_problem`). Each element is
its own job, with `SHOAL_ARRAY_INDEX` (and whatever the caller adds, e.g. Slurm's
`SLURM_ARRAY_TASK_ID`) in the environment of each of its task groups.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shoal.spec.errors import quote

MAX_ARRAY_JOBS = 1000
"""Jobs one array may become (Slurm's default MaxArraySize is 1001)."""
MAX_ARRAY_INDEX = 999_999
MAX_EXPRESSION_LENGTH = 256
MAX_ARRAY_VALUES = 2_000_000
"""Values (mappings, lists, scalars) of all an array's elements together: each element is
validated as a document of its own, so an array multiplies the work its one text costs (a
text may hold 200,000 values, `Limits.max_values`)."""
MAX_ARRAY_CHARACTERS = 256 * 2**20
"""Characters of the strings of all an array's elements together (each is checked: lengths,
NUL bytes)."""
ARRAY_INDEX_ENV = "SHOAL_ARRAY_INDEX"
ARRAY_ANNOTATION = "shoal/array"
"""Each element's annotation: the array's own name, so `shoal jobs` users can find its
siblings."""
ARRAY_INDEX_ANNOTATION = "shoal/array-index"

_PART = re.compile(r"^(\d{1,7})(?:-(\d{1,7})(?::(\d{1,7}))?)?$")
SYNTAX = "an index expression such as '0-9', '1,3,5' or '0-15:4'"


class ArrayError(ValueError):
    """An index expression that is malformed or too large; the message says which."""


@dataclass(frozen=True, slots=True)
class ArrayIndices:
    """The indices of an array, ascending and distinct."""

    indices: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.indices)


def parse_array(text: str) -> ArrayIndices:
    """The indices `text` names; raises ArrayError (with a message that can follow a path)."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ArrayError(f"must be at most {MAX_EXPRESSION_LENGTH} characters long, got "
                         f"{len(text)}")
    body, throttled, _ = text.strip().partition("%")
    if throttled:
        raise ArrayError(
            f"a throttle ('%N', at most N elements at once) is not supported by Shoal, which "
            f"has no such limit; drop it (every element may run at once) or submit the array "
            f"in parts; got {quote(text)}")
    ranges: list[range] = []
    total = 0
    for part in body.split(","):
        match = _PART.match(part.strip())
        if match is None:
            raise ArrayError(f"must be {SYNTAX}, got {quote(text)}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        step = int(match.group(3)) if match.group(3) is not None else 1
        if last > MAX_ARRAY_INDEX:
            raise ArrayError(f"indices must be at most {MAX_ARRAY_INDEX}, got {last}")
        if last < first:
            raise ArrayError(f"a range must not end before it starts, got {part.strip()!r}")
        if step < 1:
            raise ArrayError(f"a step must be at least 1, got {part.strip()!r}")
        # Counted before anything is expanded: '0-999999' costs no more than '0-9'.
        total += (last - first) // step + 1
        if total > MAX_ARRAY_JOBS:
            raise ArrayError(f"an array may hold at most {MAX_ARRAY_JOBS} jobs, "
                             f"{quote(text)} holds more")
        ranges.append(range(first, last + 1, step))
    return ArrayIndices(tuple(sorted({i for r in ranges for i in r})))


def element_name(name: str, index: int) -> str:
    """The job name of an array's element."""
    return f"{name}-{index}"


def array_env(indices: ArrayIndices, index: int) -> dict[str, str]:
    return {ARRAY_INDEX_ENV: str(index)}


def expand_array(document: Mapping[str, Any], indices: ArrayIndices,
                 env_of: Callable[[int], Mapping[str, str]] = lambda _: {}
                 ) -> list[dict[str, Any]]:
    """One native Job document per index: `document` (without `spec.array`) named
    `<name>-<i>`, with `SHOAL_ARRAY_INDEX` and `env_of(i)` in each task group's environment
    (they win over the group's own) and the array's annotations."""
    name = str(document["metadata"]["name"])
    out: list[dict[str, Any]] = []
    for index in indices.indices:
        element = copy.deepcopy(dict(document))
        spec = element["spec"]
        spec.pop("array", None)
        metadata = element["metadata"]
        metadata["name"] = element_name(name, index)
        metadata["annotations"] = {**metadata.get("annotations", {}),
                                   ARRAY_ANNOTATION: name, ARRAY_INDEX_ANNOTATION: str(index)}
        env = {**array_env(indices, index), **env_of(index)}
        for group in spec["taskGroups"]:
            group["env"] = {**group.get("env", {}), **env}
        out.append(element)
    return out


def array_size_problem(document: Any, indices: ArrayIndices) -> str | None:
    """Why `indices.count` copies of `document` are too much to check, or None. Counted on
    the one document, before any copy is made."""
    values = characters = 0
    stack = [document]
    while stack:
        value = stack.pop()
        values += 1
        if isinstance(value, str):
            characters += len(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    if values * indices.count > MAX_ARRAY_VALUES:
        return (f"{indices.count} copies of a document of {values} values hold more than "
                f"{MAX_ARRAY_VALUES} values together; submit fewer elements at once")
    if characters * indices.count > MAX_ARRAY_CHARACTERS:
        return (f"{indices.count} copies of a document of {characters} characters hold "
                f"more than {MAX_ARRAY_CHARACTERS} together; submit fewer elements at once")
    return None
