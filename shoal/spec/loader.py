"""Loading native `shoal/v1` YAML: reading files, splitting them into documents, checking each
document's apiVersion and kind, validating it against its model and its `Limits`, converting
it (a load's first job once per shape: `shoal.spec.job_shapes`), then running the
cross-document checks over the whole load and returning a `SpecBundle`.
Reading the text itself, within the limits, is `shoal.spec.reading`'s.

Nothing is raised before the whole load has been examined: every issue found in every file
is gathered, sorted into file and document order, and raised together in one `SpecError`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal.spec import convert
from shoal.spec.bundle import SpecBundle
from shoal.spec.checks import Declarations, Known, check_all
from shoal.spec.cluster_documents import (
    NodeDocument,
    PriorityClassDocument,
    ResourceFlavorDocument,
    SchedulerProfileDocument,
    VirtualClusterDocument,
)
from shoal.spec.convert import Declared
from shoal.spec.document_types import API_VERSION
from shoal.spec.documents import DOCUMENT_MODELS, JobDocument
from shoal.spec.errors import DocRef, IssueLog, SpecError, SpecIssue, quote
from shoal.spec.flavors import resource_flavor
from shoal.spec.generated_names import CountedNames, generate_prefix, given_name, named
from shoal.spec.imports import Lowered, Original, original_path
from shoal.spec.imports.registry import LoadItem, lower_load
from shoal.spec.imports.slurm_batch import script_documents
from shoal.spec.imports.slurm_header import is_batch_script
from shoal.spec.job_shapes import CONVERTED, shape_of
from shoal.spec.launch import launch_problems
from shoal.spec.limits import DEFAULT_LIMITS, Limits, document_problems, node_count_problem
from shoal.spec.messages import validated
from shoal.spec.multicluster import MULTI_CLUSTER_KIND, is_multicluster
from shoal.spec.reading import UnreadableError, json_documents, yaml_documents

_KINDS = ", ".join(sorted(DOCUMENT_MODELS))
MULTI_CLUSTER_HINT = (
    "a multi-cluster job (OpenPAI super-2 or MultiClusterJob) goes to several clusters, not "
    "to one scheduler: check it with `shoal mc validate FILE` and see a cluster's copy with "
    "`shoal mc specialise FILE --cluster ALIAS`")


def load_text(text: str, source: str = "<string>", *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = (),
              known_resource_flavors: Collection[str] = (),
              limits: Limits = DEFAULT_LIMITS, launchable: bool = False) -> SpecBundle:
    """Load the documents of one YAML text; `source` names it in error messages.

    `launchable`: also refuse jobs that could never be started (no command, NUL bytes, bad
    environment names: `shoal.spec.launch`), as a submission to a running Shoal must be; a
    scenario or trace, which only schedules, may leave its commands out."""
    return _load([(source, text)], IssueLog(),
                 Known(known_queues, known_nodes, known_priority_classes,
                       known_resource_flavors), [source],
                 _Options(limits, launchable))


def load_json(text: str, source: str = "<string>", *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = (),
              known_resource_flavors: Collection[str] = (),
              limits: Limits = DEFAULT_LIMITS, launchable: bool = False) -> SpecBundle:
    """Load one document given as a JSON object (what API clients send).

    Read by the json module, not as YAML (of which JSON is a subset): it is several times
    faster, and it reads JSON as JSON, where PyYAML's YAML 1.1 would take `1e3` for a string.
    Checked and converted exactly as a YAML document is."""
    return _load([(source, text)], IssueLog(),
                 Known(known_queues, known_nodes, known_priority_classes,
                       known_resource_flavors), [source],
                 _Options(limits, launchable), reader=json_documents)


def load_file(path: str | os.PathLike[str], *, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = (),
              limits: Limits = DEFAULT_LIMITS) -> SpecBundle:
    """Load one YAML file (several documents separated by `---`)."""
    return load_files([path], known_queues=known_queues, known_nodes=known_nodes,
                      known_priority_classes=known_priority_classes, limits=limits)


def load_files(paths: Iterable[str | os.PathLike[str]], *, known_queues: Collection[str] = (),
               known_nodes: Collection[str] = (),
               known_priority_classes: Collection[str] = (),
               limits: Limits = DEFAULT_LIMITS) -> SpecBundle:
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
    return _load(texts, log, Known(known_queues, known_nodes, known_priority_classes), sources,
                 _Options(limits, launchable=False))


# ---- one load -----------------------------------------------------------------------------

Reader = Callable[[str, str, IssueLog, Limits], Iterator[tuple[int, Any]]]


@dataclass(frozen=True, slots=True)
class _Options:
    limits: Limits
    launchable: bool


def _load(texts: list[tuple[str, str]], log: IssueLog, known: Known,
          sources: list[str], options: _Options, reader: Reader = yaml_documents
          ) -> SpecBundle:
    d = Declarations(unreadable=bool(log))
    originals: dict[str, Original] = {}
    lowered_at: dict[tuple[str, int], Lowered] = {}
    documents_of: dict[str, tuple[str, int]] = {}
    generated: dict[str, str] = {}
    jobs_seen = 0
    loaded: list[list[LoadItem]] = []
    for source, text in texts:
        documents: list[tuple[DocRef, Any]] = []
        try:
            read = (script_documents if reader is yaml_documents and is_batch_script(text)
                    else reader)
            for number, data in read(source, text, log, options.limits):
                documents.append((DocRef(source, number), data))
        except UnreadableError:
            d.unreadable = True
        loaded.append(list(lower_load(log, documents)))
    # Generated names avoid every name the load gives itself, wherever it stands.
    names = CountedNames()
    for item in (item for items in loaded for item in items):
        given = given_name(item.data)
        if given is not None:
            names.take(given)
    for items in loaded:
        for item in items:
            data, prefix = item.data, generate_prefix(item.data)
            if prefix is not None:
                data = named(data, names(prefix))
            jobs_before, issues_before = len(d.jobs), len(log.issues)
            if _document(log, d, item.doc, data, options, jobs_seen=jobs_seen) == "Job":
                jobs_seen += 1
            if prefix is not None and len(d.jobs) > jobs_before:
                generated[d.jobs[-1].value.name] = prefix
            for added in d.jobs[jobs_before:]:
                documents_of[added.value.name] = (item.doc.source, item.doc.document)
                if item.lowered is not None:
                    originals[added.value.name] = item.lowered.original
            if item.lowered is not None:
                lowered_at[item.doc.source, item.doc.document] = item.lowered
                _relocate(log, issues_before, item.lowered)
    checks_from = len(log.issues)
    check_all(log, d, known)
    # A check across documents (an unknown queue ...) names a lowered document's field as
    # its original does, too.
    log.issues[checks_from:] = [
        issue if (lowered := lowered_at.get((issue.source, issue.document))) is None
        else dataclasses.replace(issue, path=original_path(lowered, issue.path))
        for issue in log.issues[checks_from:]]
    if log.issues:
        order = {source: i for i, source in enumerate(sources)}
        raise SpecError(sorted(log.issues, key=lambda x: (order.get(x.source, 0), x.document)))
    return SpecBundle(
        nodes=tuple(n for x in d.nodes for n in x.value),
        virtual_clusters=tuple(x.value for x in d.virtual_clusters),
        priority_classes=tuple(x.value for x in d.priority_classes),
        resource_flavors=tuple(x.value for x in d.resource_flavors),
        jobs=tuple(x.value for x in d.jobs),
        profile=d.profile_spec, originals=originals, job_documents=documents_of,
        generated=generated)


def _relocate(log: IssueLog, start: int, lowered: Lowered) -> None:
    """Issues found in a lowered document, at the paths its original document names."""
    log.issues[start:] = [
        dataclasses.replace(issue, path=original_path(lowered, issue.path))
        for issue in log.issues[start:]]


def _document(log: IssueLog, d: Declarations, where: DocRef, data: Any, options: _Options, *,
              jobs_seen: int) -> str | None:
    """Validate and convert one document into `d`; return its kind when it is a known one."""
    if not isinstance(data, Mapping):
        log.add(where, "", f"a document must be a mapping with apiVersion, kind, metadata; "
                f"got {type(data).__name__} {quote(data)}")
        return None
    kind = data.get("kind")
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    doc = DocRef(where.source, where.document, kind if isinstance(kind, str) else None,
                 name if isinstance(name, str) else None)
    if is_multicluster(data):
        log.add(doc, "kind" if kind == MULTI_CLUSTER_KIND else "protocolVersion",
                MULTI_CLUSTER_HINT)
        return None
    known_kind = isinstance(kind, str) and kind in DOCUMENT_MODELS
    ok = _header(log, doc, data, known_kind)
    if not known_kind or not isinstance(kind, str):
        return None
    converted = ok and _convert(log, d, doc, data, options, kind=kind, jobs_seen=jobs_seen)
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
        log.add(doc, "apiVersion", f"must be {API_VERSION!r}, got {quote(version)}")
        ok = False
    if "kind" not in data:
        log.add(doc, "kind", f"required field is missing; expected one of {_KINDS}")
        ok = False
    elif not known_kind:
        log.add(doc, "kind", f"must be one of {_KINDS}, got {quote(data['kind'])}")
        ok = False
    return ok


def _convert(log: IssueLog, d: Declarations, doc: DocRef, data: Any, options: _Options, *,
             kind: str, jobs_seen: int) -> bool:
    model_type = DOCUMENT_MODELS[kind]
    # A load's first job: converted already if a document of its shape was (a burst's).
    shape = (shape_of(data, options.limits, options.launchable)
             if jobs_seen == 0 and issubclass(model_type, JobDocument) else None)
    if shape is not None:
        remembered = CONVERTED.get(shape)
        if remembered is not None:
            d.jobs.append(Declared(doc, remembered))
            return True
    issues_before = len(log.issues)
    model = validated(log, doc, model_type, data)
    if model is None:
        return False
    problems = document_problems(model, options.limits)
    if isinstance(model, NodeDocument):
        count = node_count_problem(model.spec.count, d.node_count, options.limits)
        problems += [count] if count is not None else []
        d.node_count += model.spec.count
    if isinstance(model, JobDocument) and options.launchable:
        problems += launch_problems(model)
    for path, message in problems:
        log.add(doc, path, message)
    if problems:
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
    if isinstance(model, ResourceFlavorDocument):
        d.resource_flavors.append(Declared(doc, resource_flavor(model)))
        return True
    if isinstance(model, JobDocument):
        job = convert.job(log, doc, model, jobs_seen)
        d.jobs.append(Declared(doc, job))
        if shape is not None and len(log.issues) == issues_before:
            CONVERTED.remember(shape, job)
        return True
    assert isinstance(model, SchedulerProfileDocument)
    d.profiles.append(doc)
    if d.profile_spec is None:
        d.profile_spec = dict(model.spec)
    return True
