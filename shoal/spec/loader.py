"""Loading native `shoal/v1` YAML: reading files, splitting them into documents, checking each
document's apiVersion and kind, validating it against its model, converting it, then running
the cross-document checks over the whole load and returning a `SpecBundle`.

Nothing is raised before the whole load has been examined: every issue found in every file
is gathered, sorted into file and document order, and raised together in one `SpecError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from shoal.spec import convert
from shoal.spec.bundle import SpecBundle
from shoal.spec.checks import Declarations, Known, check_all
from shoal.spec.convert import Declared
from shoal.spec.documents import (
    API_VERSION,
    DOCUMENT_MODELS,
    JobDocument,
    NodeDocument,
    PriorityClassDocument,
    SchedulerProfileDocument,
    VirtualClusterDocument,
)
from shoal.spec.errors import DocRef, IssueLog, SpecError, SpecIssue
from shoal.spec.messages import describe

_KINDS = ", ".join(sorted(DOCUMENT_MODELS))


def load_text(text: str, source: str = "<string>", *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = ()) -> SpecBundle:
    """Load the documents of one YAML text; `source` names it in error messages."""
    return _load([(source, text)], IssueLog(),
                 Known(known_queues, known_nodes, known_priority_classes), [source])


def load_json(text: str, source: str = "<string>", *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = ()) -> SpecBundle:
    """Load one document given as a JSON object (what API clients send).

    Read by the json module, not as YAML (of which JSON is a subset): it is several times
    faster, and it reads JSON as JSON, where PyYAML's YAML 1.1 would take `1e3` for a string.
    Checked and converted exactly as a YAML document is."""
    return _load([(source, text)], IssueLog(),
                 Known(known_queues, known_nodes, known_priority_classes), [source],
                 reader=_json_documents)


def load_file(path: str | os.PathLike[str], *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = ()) -> SpecBundle:
    """Load one YAML file (several documents separated by `---`)."""
    return load_files([path], known_queues=known_queues, known_nodes=known_nodes,
                      known_priority_classes=known_priority_classes)


def load_files(paths: Iterable[str | os.PathLike[str]], *, known_queues: Collection[str] = (),
               known_nodes: Collection[str] = (),
               known_priority_classes: Collection[str] = ()) -> SpecBundle:
    """Load several files as one load: names are unique and references resolve across all
    of them, and jobs take their default submit order from the files in the order given."""
    log = IssueLog()
    sources: list[str] = []
    texts: list[tuple[str, str]] = []
    for path in paths:
        source = os.fspath(path)
        sources.append(source)
        try:
            texts.append((source, Path(path).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            log.add(DocRef(source, 0), "", f"cannot read the file: {exc}")
    if not sources:
        raise SpecError([SpecIssue("<no files>", 0, None, None, "", "no files were given")])
    return _load(texts, log, Known(known_queues, known_nodes, known_priority_classes), sources)


# ---- reading YAML -------------------------------------------------------------------------

# libyaml's parser when PyYAML was built with it: 5–10 times faster, and the API parses every
# submission. The constructors (and so the duplicate-key check below) stay Python's.
if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_SafeLoader):
    """PyYAML keeps the last of two equal keys silently; a spec with a repeated key almost
    always hides a mistake, so this loader refuses it."""


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
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark)
    return loader.construct_mapping(node, deep=True)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _documents(source: str, text: str, log: IssueLog) -> Iterator[tuple[int, Any]]:
    """(1-based number, data) of each non-empty document; a syntax error ends the file."""
    number = 0
    found = False
    try:
        for data in yaml.load_all(text, Loader=StrictLoader):
            number += 1
            if data is not None:
                found = True
                yield number, data
    except yaml.YAMLError as exc:
        log.add(DocRef(source, number + 1), "", _yaml_message(exc))
        raise _UnreadableError from exc
    if not found:
        log.add(DocRef(source, 0), "", "contains no documents; expected at least one "
                f"{API_VERSION} document (kinds: {_KINDS})")


def _json_documents(source: str, text: str, log: IssueLog) -> Iterator[tuple[int, Any]]:
    """The one document of a JSON text, as `_documents` yields them."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        log.add(DocRef(source, 1), "", f"invalid JSON at line {exc.lineno}, column "
                f"{exc.colno}: {exc.msg}")
        raise _UnreadableError from exc
    except _DuplicateKeyError as exc:
        log.add(DocRef(source, 1), "", f"invalid JSON: found duplicate key {exc.args[0]!r}")
        raise _UnreadableError from exc
    if data is None:
        log.add(DocRef(source, 0), "", "contains no document; expected one "
                f"{API_VERSION} document (kinds: {_KINDS})")
        return
    yield 1, data


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """As StrictLoader for YAML: json keeps the last of two equal keys silently."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return data


class _UnreadableError(Exception):
    """A file stopped being readable part way: its later documents are unknown."""


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = exc.problem or exc.context or "cannot parse"
        return f"invalid YAML{where}: {what}"
    return f"invalid YAML: {exc}"


# ---- one load -----------------------------------------------------------------------------

Reader = Callable[[str, str, IssueLog], Iterator[tuple[int, Any]]]


def _load(texts: list[tuple[str, str]], log: IssueLog, known: Known,
          sources: list[str], reader: Reader = _documents) -> SpecBundle:
    d = Declarations(unreadable=bool(log))
    jobs_seen = 0
    for source, text in texts:
        try:
            for number, data in reader(source, text, log):
                if _document(log, d, DocRef(source, number), data, jobs_seen=jobs_seen) == "Job":
                    jobs_seen += 1
        except _UnreadableError:
            d.unreadable = True
    check_all(log, d, known)
    if log.issues:
        order = {source: i for i, source in enumerate(sources)}
        raise SpecError(sorted(log.issues, key=lambda x: (order.get(x.source, 0), x.document)))
    return SpecBundle(
        nodes=tuple(n for x in d.nodes for n in x.value),
        virtual_clusters=tuple(x.value for x in d.virtual_clusters),
        priority_classes=tuple(x.value for x in d.priority_classes),
        jobs=tuple(x.value for x in d.jobs),
        profile=d.profile_spec)


def _document(log: IssueLog, d: Declarations, where: DocRef, data: Any, *,
              jobs_seen: int) -> str | None:
    """Validate and convert one document into `d`; return its kind when it is a known one."""
    if not isinstance(data, Mapping):
        log.add(where, "", f"a document must be a mapping with apiVersion, kind, metadata; "
                f"got {type(data).__name__} {_short(data)}")
        return None
    kind = data.get("kind")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    doc = DocRef(where.source, where.document, kind if isinstance(kind, str) else None,
                 name if isinstance(name, str) else None)
    known_kind = isinstance(kind, str) and kind in DOCUMENT_MODELS
    ok = _header(log, doc, data, known_kind)
    if not known_kind or not isinstance(kind, str):
        return None
    converted = ok and _convert(log, d, doc, data, kind=kind, jobs_seen=jobs_seen)
    if not converted:
        if doc.name is not None:
            d.failed_names.setdefault(kind, set()).add(doc.name)
        else:
            d.incomplete.add(kind)
        if kind == "Node":
            # A broken Node document may stand for several nodes (count): names unknown.
            d.incomplete.add(kind)
    d.has_nodes = d.has_nodes or kind == "Node"
    return kind


def _header(log: IssueLog, doc: DocRef, data: Mapping[Any, Any], known_kind: bool) -> bool:
    ok = True
    version = data.get("apiVersion")
    if "apiVersion" not in data:
        log.add(doc, "apiVersion", f"required field is missing; expected {API_VERSION!r}")
        ok = False
    elif version != API_VERSION:
        log.add(doc, "apiVersion", f"must be {API_VERSION!r}, got {version!r}")
        ok = False
    if "kind" not in data:
        log.add(doc, "kind", f"required field is missing; expected one of {_KINDS}")
        ok = False
    elif not known_kind:
        log.add(doc, "kind", f"must be one of {_KINDS}, got {data['kind']!r}")
        ok = False
    return ok


def _convert(log: IssueLog, d: Declarations, doc: DocRef, data: Any, *, kind: str,
             jobs_seen: int) -> bool:
    model_type = DOCUMENT_MODELS[kind]
    try:
        model = model_type.model_validate(data)
    except ValidationError as exc:
        for path, message in describe(model_type, exc):
            log.add(doc, path, message)
        return False
    if isinstance(model, NodeDocument):
        nodes = convert.nodes(log, doc, model)
        if nodes is not None:
            d.nodes.append(Declared(doc, nodes))
        return nodes is not None
    if isinstance(model, VirtualClusterDocument):
        d.min_paths[model.metadata.name] = ("spec.min" if model.spec.min is not None
                                            else "spec.flexibleResourceMin")
        vc = convert.virtual_cluster(log, doc, model)
        if vc is not None:
            d.virtual_clusters.append(Declared(doc, vc))
        return vc is not None
    if isinstance(model, PriorityClassDocument):
        d.priority_classes.append(Declared(doc, convert.priority_class(model)))
        return True
    if isinstance(model, JobDocument):
        d.jobs.append(Declared(doc, convert.job(log, doc, model, jobs_seen)))
        return True
    assert isinstance(model, SchedulerProfileDocument)
    d.profiles.append(doc)
    if d.profile_spec is None:
        d.profile_spec = dict(model.spec)
    return True


def _short(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."
