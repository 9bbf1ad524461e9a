"""Reading a text into the plain data of its documents, safely: YAML (`yaml_documents`) and
JSON (`json_documents`), each checked against the `Limits` before anything is constructed.

Both readers build Python objects recursively (PyYAML's constructors, libyaml's composer in C,
the json module), so a text nested 50,000 deep would overflow the C stack, and a YAML alias
bomb expands a few hundred bytes into gigabytes. Hence a first pass over the text that
recurses nowhere and stops at the first excess:

- YAML: the parser's events (libyaml's when PyYAML has it), counting depth and the entries
  of each collection; an alias (`*name`) or anchor (`&name`) is refused outright (a spec
  has no use for them), and so is an integer literal longer than any 64-bit one.
- JSON: a scan of the brackets and commas outside strings (skipped when the text has too
  few of them to exceed a limit, as a typical job does). `Infinity`, `NaN` and integer
  literals longer than any 64-bit one are refused while decoding; `1e999` decodes to
  infinity, which the fields refuse by name.
- Both: no string (or key) may hold a NUL byte or half a surrogate pair, which only an
  escape can write; refused under the path of the first one.

Where an issue is reported: a duplicate key under the key's own path (found again by
walking the text, only once one is found); every other reading problem under the empty path
(the document as a whole), with the line and column in the message. The API reports the
empty path as `body`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from shoal.spec.document_types import API_VERSION
from shoal.spec.documents import DOCUMENT_MODELS
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.limits import Limits

_KINDS = ", ".join(sorted(DOCUMENT_MODELS))
#: The longest integer literal read: 2**63 has 19 digits, so longer ones are far outside
#: every field's range, and converting them costs time quadratic in their length.
MAX_INTEGER_DIGITS = 32


class UnreadableError(Exception):
    """A file stopped being readable part way: its later documents are unknown."""


# ---- YAML ---------------------------------------------------------------------------------

# libyaml's parser when PyYAML was built with it: 5–10 times faster, and the API parses every
# submission. The constructors (and so the duplicate-key check below) stay Python's.
if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_SafeLoader):
    """PyYAML keeps the last of two equal keys silently; a spec with a repeated key almost
    always hides a mistake, so this loader refuses it."""


class _DuplicateKeyError(yaml.constructor.ConstructorError):
    def __init__(self, node: yaml.MappingNode, key: Any, key_node: yaml.Node) -> None:
        super().__init__("while constructing a mapping", node.start_mark,
                         f"found duplicate key {quote(key)}", key_node.start_mark)
        self.key = key


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[tuple[type, Any]] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        # Keyed by type too: `1` and `on` (true) are equal in Python but distinct YAML keys.
        typed = (type(key), key)
        try:
            duplicate = typed in seen
            seen.add(typed)
        except TypeError:  # an unhashable key; construct_mapping reports it
            continue
        if duplicate:
            raise _DuplicateKeyError(node, key, key_node)
    return loader.construct_mapping(node, deep=True)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_RESOLVER = yaml.resolver.Resolver()
_INT_TAG = "tag:yaml.org,2002:int"


def _resolve(plain: str) -> str:
    """The tag YAML gives a plain (unquoted) scalar: int, float, bool, str …"""
    tag: str = _RESOLVER.resolve(  # type: ignore[no-untyped-call]  # PyYAML is untyped here
        yaml.ScalarNode, plain, (True, False))
    return tag


@dataclass(frozen=True, slots=True)
class _Refusal:
    document: int
    message: str


def _yaml_refusal(text: str, limits: Limits) -> _Refusal | None:
    """The first thing in `text` beyond the limits, found from the parser's events alone;
    None if there is none (or the text does not parse: the load says why)."""
    document = 0
    values = 0
    counts: list[list[int]] = []
    """Per open collection: [nodes read in it, the most it may hold]."""
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):
            if isinstance(event, yaml.NodeEvent | yaml.DocumentStartEvent):
                values += 1
                if values > limits.max_values:
                    return _Refusal(document, f"the text holds more than {limits.max_values} "
                                              f"values{_at(event.start_mark)}")
            if isinstance(event, yaml.DocumentStartEvent):
                document += 1
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                counts.pop()
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            problem = _node_problem(event, counts, limits)
            if problem is not None:
                return _Refusal(document, f"{problem}{_at(event.start_mark)}")
            if isinstance(event, yaml.CollectionStartEvent):
                # A mapping's keys and values both count: twice the entries.
                mapping = isinstance(event, yaml.MappingStartEvent)
                counts.append([0, limits.max_items * (2 if mapping else 1)])
    except yaml.YAMLError:
        return None
    return None


def _node_problem(event: yaml.NodeEvent, counts: list[list[int]], limits: Limits
                  ) -> str | None:
    if isinstance(event, yaml.AliasEvent):
        return "aliases (*name) are not allowed"
    if event.anchor is not None:
        return "anchors (&name) are not allowed"
    if counts:
        top = counts[-1]
        top[0] += 1
        if top[0] > top[1]:
            return f"a mapping or list has more than {limits.max_items} entries"
    if isinstance(event, yaml.CollectionStartEvent):
        if len(counts) >= limits.max_depth:
            return f"mappings and lists are nested more than {limits.max_depth} deep"
    elif (isinstance(event, yaml.ScalarEvent) and event.implicit[0]
          and len(event.value) > MAX_INTEGER_DIGITS
          and _resolve(event.value) == _INT_TAG):
        return (f"an integer of {len(event.value)} characters is outside every field's range "
                f"(at most {MAX_INTEGER_DIGITS})")
    return None


class _Mark(Protocol):
    line: int
    column: int


def _at(mark: _Mark | None) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def yaml_documents(source: str, text: str, log: IssueLog, limits: Limits
                   ) -> Iterator[tuple[int, Any]]:
    """(1-based number, data) of each non-empty document; a syntax error, or anything beyond
    the limits, ends the file."""
    refusal = _yaml_refusal(text, limits)
    if refusal is not None:
        log.add(DocRef(source, max(refusal.document, 1)), "", f"cannot read the YAML: "
                f"{refusal.message}")
        raise UnreadableError
    number = 0
    found = False
    try:
        for data in yaml.load_all(text, Loader=StrictLoader):
            number += 1
            if data is not None:
                found = True
                _check_text(DocRef(source, number), text, data, log)
                yield number, data
    except _DuplicateKeyError as exc:
        mark = exc.problem_mark
        path = _path_at(text, mark) if mark is not None else None
        log.add(DocRef(source, number + 1), path or "",
                f"invalid YAML{_at(mark)}: found duplicate key {quote(exc.key)}")
        raise UnreadableError from exc
    except yaml.YAMLError as exc:
        log.add(DocRef(source, number + 1), "", _yaml_message(exc))
        raise UnreadableError from exc
    if not found:
        log.add(DocRef(source, 0), "", "contains no documents; expected at least one "
                f"{API_VERSION} document (kinds: {_KINDS})")


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "cannot parse"
        return f"invalid YAML{_at(mark)}: {what[:200]}"
    return f"invalid YAML: {str(exc)[:200]}"


class _Level:
    """One open collection while walking events: a mapping expecting a key or a value, or
    a list and its next index."""

    __slots__ = ("expecting_key", "index", "is_mapping", "key", "path")

    def __init__(self, is_mapping: bool, path: str) -> None:
        self.is_mapping = is_mapping
        self.key = "?"
        self.expecting_key = True
        self.index = 0
        self.path = path

    def child_path(self) -> str:
        return join_path(self.path, self.key if self.is_mapping else self.index)

    def done_with_node(self) -> None:
        if self.is_mapping:
            self.expecting_key = not self.expecting_key
        else:
            self.index += 1


def _path_at(text: str, mark: _Mark) -> str | None:
    """The path, within its document, of the mapping key whose scalar starts at `mark`."""
    levels: list[_Level] = []
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):
            if isinstance(event, yaml.CollectionEndEvent):
                levels.pop()
                if levels:
                    levels[-1].done_with_node()
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            top = levels[-1] if levels else None
            if top is not None and top.is_mapping and top.expecting_key \
                    and isinstance(event, yaml.ScalarEvent):
                top.key = event.value
                start = event.start_mark
                if start is not None and (start.line, start.column) == (mark.line, mark.column):
                    return top.child_path()
            if isinstance(event, yaml.CollectionStartEvent):
                base = top.child_path() if top is not None else ""
                levels.append(_Level(isinstance(event, yaml.MappingStartEvent), base))
            elif top is not None:
                top.done_with_node()
    except yaml.YAMLError:
        return None
    return None


# ---- both ---------------------------------------------------------------------------------

#: What no string of a spec may hold, though an escape (`"\\u0000"`, `"\\ud800"`) can
#: write it: a NUL byte (no C string, environment, file name or PostgreSQL text holds one)
#: and half a UTF-16 surrogate pair (no UTF-8 text does).
_NOT_TEXT = re.compile("[\0\ud800-\udfff]")


def _not_text_path(data: Any) -> str | None:
    """The path of the first string (or the mapping of the first key) holding `_NOT_TEXT`."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and _NOT_TEXT.search(value):
            return path
        if isinstance(value, dict):
            for key, item in reversed(value.items()):
                if isinstance(key, str) and _NOT_TEXT.search(key):
                    return path
                stack.append((join_path(path, key if isinstance(key, str) else str(key)),
                              item))
        elif isinstance(value, list):
            stack.extend((join_path(path, i), v) for i, v in reversed(list(enumerate(value))))
    return None


def _check_text(where: DocRef, text: str, data: Any, log: IssueLog) -> None:
    if "\\" in text:  # only escapes write them
        path = _not_text_path(data)
        if path is not None:
            log.add(where, path, "holds a NUL byte or an unpaired UTF-16 surrogate (an escape "
                                 "such as \\u0000 or a lone \\ud800), which no spec string may "
                                 "hold")
            raise UnreadableError


# ---- JSON ---------------------------------------------------------------------------------

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


def _json_refusal(text: str, limits: Limits) -> str | None:
    """The first thing in `text` beyond the limits on depth, entries and values; None if
    none. Values are counted, as YAML's are, with keys: by the commas, colons and opening
    brackets outside strings."""
    opened = text.count("[") + text.count("{")
    commas = text.count(",")
    if opened <= limits.max_depth and commas < limits.max_items \
            and opened + commas + text.count(":") < limits.max_values:
        return None
    counts: list[int] = []
    values = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token[0] != '"':
            values += 1
            if values > limits.max_values:
                return (f"the text holds more than {limits.max_values} values (at character "
                        f"{match.start()})")
        if token in "[{":
            if len(counts) >= limits.max_depth:
                return (f"objects and arrays are nested more than {limits.max_depth} deep "
                        f"(at character {match.start()})")
            counts.append(0)
        elif token in "]}":
            if counts:
                counts.pop()
        elif token == "," and counts:
            counts[-1] += 1
            if counts[-1] >= limits.max_items:
                return (f"an object or array has more than {limits.max_items} entries "
                        f"(at character {match.start()})")
    return None


class _LiteralError(ValueError):
    pass


def _json_int(literal: str) -> int:
    if len(literal) > MAX_INTEGER_DIGITS:
        raise _LiteralError(f"an integer of {len(literal)} characters is outside every "
                            f"field's range (at most {MAX_INTEGER_DIGITS})")
    return int(literal)


def _json_constant(name: str) -> Any:
    raise _LiteralError(f"{name} is not a JSON number; numbers must be finite")


class _RepeatedKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """As StrictLoader for YAML: json keeps the last of two equal keys silently."""
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _RepeatedKeyError
    return data


_JSON_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_json_int,
                                 parse_constant=_json_constant)
"""`json.loads` with these hooks, its decoder built once (like json's own default one,
shared by every caller): building one per body cost about as much as reading it."""


class _Repeated(dict[str, Any]):
    """An object with a repeated key, as the second decoding (which finds its path) marks it."""

    repeated: str = ""


def _mark_repeated(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) == len(pairs):
        return data
    marked = _Repeated(data)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.repeated = key
            break
        seen.add(key)
    return marked


def _repeated_key_path(text: str) -> tuple[str, str]:
    """The path of the first repeated key of `text` (already known to decode), and the key."""
    data = json.loads(text, object_pairs_hook=_mark_repeated, parse_int=_json_int,
                      parse_constant=_json_constant)
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Repeated):
            return join_path(path, value.repeated), value.repeated
        if isinstance(value, dict):
            stack.extend((join_path(path, k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((join_path(path, i), v) for i, v in reversed(list(enumerate(value))))
    return "", "?"  # pragma: no cover - the first decoding found a repeated key


def json_documents(source: str, text: str, log: IssueLog, limits: Limits
                   ) -> Iterator[tuple[int, Any]]:
    """The one document of a JSON text, as `yaml_documents` yields them."""
    where = DocRef(source, 1)
    refusal = _json_refusal(text, limits)
    if refusal is not None:
        log.add(where, "", f"cannot read the JSON: {refusal}")
        raise UnreadableError
    try:
        data = _JSON_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        log.add(where, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}")
        raise UnreadableError from exc
    except _LiteralError as exc:
        log.add(where, "", f"invalid JSON: {exc}")
        raise UnreadableError from exc
    except _RepeatedKeyError as exc:
        path, key = _repeated_key_path(text)
        log.add(where, path, f"invalid JSON: found duplicate key {quote(key)}")
        raise UnreadableError from exc
    if data is None:
        log.add(DocRef(source, 0), "", "contains no document; expected one "
                f"{API_VERSION} document (kinds: {_KINDS})")
        return
    _check_text(where, text, data, log)
    yield 1, data
