"""Reading a multi-cluster job, in either form, into a `MultiClusterJob`: the text read
within the `Limits` (`shoal.spec.reading`), the form told apart, the shared fields checked
(`shoal.spec.multicluster_fields`), and every member's copy made once so that a parameter
missing for a member or a placeholder that names nothing is refused here, under its path.

Every issue is gathered and raised together in one `SpecError`. A secret's value is never
quoted: its messages name the secret only.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictStr, ValidationError

from shoal.spec.document_types import API_VERSION, JOB_NAME_PATTERN
from shoal.spec.documents import JobMetadata
from shoal.spec.errors import DocRef, IssueLog, SpecError, join_path, quote
from shoal.spec.limits import DEFAULT_LIMITS, Limits, Problem
from shoal.spec.messages import describe
from shoal.spec.multicluster import (
    MULTI_CLUSTER_KIND,
    RUNTIME_PLUGINS,
    SUPER_2,
    SUPER_SCHEDULER,
    JobForm,
    MemberRef,
    MultiClusterJob,
    Param,
)
from shoal.spec.multicluster_fields import (
    LEFTOVER,
    MAX_CLUSTERS,
    MAX_PARAM_ITEMS,
    MAX_PARAMS,
    PARAM_NAME,
    ListedClusters,
    MappedClusters,
    StrictModel,
    SuperSchedulerSpec,
    minutes_or_duration,
    safe_alias,
)
from shoal.spec.reading import UnreadableError, yaml_documents
from shoal.spec.specialise import document_for, per_member, source_path

#: The longest job name: a copy's name adds `-<alias>` and must stay within Shoal's 253.
MAX_NAME_LENGTH = 253


class MultiClusterJobSpec(SuperSchedulerSpec):
    """A `MultiClusterJob`'s spec: the `super_scheduler` parameters and a template."""

    template: dict[StrictStr, Any] = Field(
        description="A Shoal Job's spec (shoal/v1 Job), with <% $mcc.x %> placeholders "
                    "anywhere.")
    secrets: Any = Field(
        default=None,
        description="{name: value}. token-<alias>: each member's credential, kept only for "
                    "that member's copy; other secrets are kept for every copy. (Checked "
                    "apart, so that no message ever quotes a value.)")


class MultiClusterJobDocument(StrictModel):
    """Shoal's own multi-cluster job: `apiVersion: shoal/v1`, `kind: MultiClusterJob`."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["MultiClusterJob"]
    metadata: JobMetadata
    spec: MultiClusterJobSpec


def read_multicluster_file(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS
                           ) -> MultiClusterJob:
    """Read the one multi-cluster job of a YAML (or JSON) file."""
    source = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log = IssueLog()
        log.add(DocRef(source, 0), "", f"cannot read the file: {exc}")
        raise SpecError(log.issues) from exc
    return read_multicluster_text(text, source, limits=limits)


def read_multicluster_text(text: str, source: str = "<string>", *,
                           limits: Limits = DEFAULT_LIMITS) -> MultiClusterJob:
    """Read the one multi-cluster job of a YAML text; raises SpecError listing every
    issue."""
    log = IssueLog()
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_body_bytes:
        log.add(DocRef(source, 0), "", f"is larger than {limits.max_body_bytes} bytes")
        raise SpecError(log.issues)
    documents: list[Any] = []
    with contextlib.suppress(UnreadableError):  # the log says why
        documents = [data for _, data in yaml_documents(source, text, log, limits)]
    log.raise_if_any()
    if len(documents) != 1:
        log.add(DocRef(source, 0), "", f"must hold one multi-cluster job, got "
                                       f"{len(documents)} documents")
        raise SpecError(log.issues)
    return multicluster_from_data(documents[0], source, limits=limits)


def multicluster_from_data(data: Any, source: str = "<string>", *,
                           limits: Limits = DEFAULT_LIMITS) -> MultiClusterJob:
    """A multi-cluster job from a read document (mappings, lists and scalars)."""
    log = IssueLog()
    where = DocRef(source, 1)
    if not isinstance(data, Mapping):
        log.add(where, "", f"a multi-cluster job must be a mapping, got "
                           f"{type(data).__name__}")
        raise SpecError(log.issues)
    if data.get("protocolVersion") == SUPER_2:
        job = _super_2(log, source, data, limits)
    elif data.get("kind") == MULTI_CLUSTER_KIND:
        job = _shoal(log, source, data, limits)
    else:
        log.add(where, "", f"is no multi-cluster job: expected protocolVersion: {SUPER_2} "
                           f"(OpenPAI) or apiVersion: {API_VERSION} with kind: "
                           f"{MULTI_CLUSTER_KIND}")
        job = None
    log.raise_if_any()
    assert job is not None
    def problems_of(alias: str) -> list[Problem]:
        problems: list[Problem] = []
        document_for(job, alias, problems, limits)
        return problems
    for path, message in per_member(job, problems_of):
        log.add(DocRef(source, 1, job.kind_label, job.name), path, message)
    log.raise_if_any()
    return job


# ---- the two forms ------------------------------------------------------------------------

def _super_2(log: IssueLog, source: str, data: Mapping[str, Any], limits: Limits
             ) -> MultiClusterJob | None:
    name = data.get("name")
    doc = DocRef(source, 1, SUPER_2, name if isinstance(name, str) else None)
    problems: list[Problem] = []
    problems += _name_problems(name, "name")
    if not isinstance(data.get("taskRoles"), Mapping):
        problems.append(("taskRoles", "required: a mapping of role names to roles"))
    if "extra" in data and "extras" in data:
        problems.append(("extra", "give OpenPAI's `extras` or the seed's `extra`, not both"))
    plugins_key = "extras" if "extras" in data else "extra"
    entry_path, parameters = _super_scheduler_entry(data.get(plugins_key), plugins_key,
                                                    problems)
    secrets = _secrets(data.get("secrets"), "secrets", limits, problems)
    template = {k: v for k, v in data.items() if k != "secrets"}
    problems += _json_problems(template, "")
    spec = None
    if parameters is not None:
        spec = _validated(SuperSchedulerSpec, parameters, join_path(entry_path, "parameters"),
                          problems)
    for path, message in problems:
        log.add(doc, path, message)
    if problems or spec is None or not isinstance(name, str):
        return None
    return _job(log, doc, name, JobForm.SUPER_2, spec, template, secrets,
                join_path(entry_path, "parameters"), limits)


def _shoal(log: IssueLog, source: str, data: Mapping[str, Any], limits: Limits
           ) -> MultiClusterJob | None:
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    doc = DocRef(source, 1, MULTI_CLUSTER_KIND, name if isinstance(name, str) else None)
    problems: list[Problem] = []
    model = _validated(MultiClusterJobDocument, data, "", problems)
    if model is not None:
        problems += _name_problems(model.metadata.name, "metadata.name")
        secrets = _secrets(data["spec"].get("secrets"), "spec.secrets", limits, problems)
        template = {"apiVersion": API_VERSION, "kind": "Job",
                    "metadata": dict(data["metadata"]), "spec": data["spec"]["template"]}
        problems += [(source_path(JobForm.SHOAL, path), message)
                     for path, message in _json_problems(template, "")]
    for path, message in problems:
        log.add(doc, path, message)
    if problems or model is None:
        return None
    return _job(log, doc, model.metadata.name, JobForm.SHOAL, model.spec, template, secrets,
                "spec", limits)


def _validated(model: type[Any], data: Any, prefix: str, problems: list[Problem]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for path, message in describe(model, exc):
            problems.append((_joined(prefix, path), message))
        return None


def _parent(path: str) -> str:
    """`path` less its last field (`a.b.clusters` → `a.b`)."""
    return path.rsplit(".", 1)[0] if "." in path else ""


def _joined(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def _super_scheduler_entry(extras: Any, key: str, problems: list[Problem]
                           ) -> tuple[str, Any]:
    """The path of the `super_scheduler` entry and its parameters."""
    plugins_path = join_path(key, RUNTIME_PLUGINS)
    missing = (plugins_path, f"must list a `plugin: {SUPER_SCHEDULER}` entry whose parameters "
                             f"name the clusters")
    if not isinstance(extras, Mapping):
        problems.append(missing)
        return plugins_path, None
    plugins = extras.get(RUNTIME_PLUGINS)
    if not isinstance(plugins, list):
        problems.append(missing)
        return plugins_path, None
    found = [i for i, p in enumerate(plugins)
             if isinstance(p, Mapping) and p.get("plugin") == SUPER_SCHEDULER]
    if len(found) != 1:
        problems.append(missing if not found else
                        (join_path(plugins_path, found[1]),
                         f"a second `{SUPER_SCHEDULER}` entry; give one"))
        return plugins_path, None
    entry_path = join_path(plugins_path, found[0])
    parameters = plugins[found[0]].get("parameters")
    if not isinstance(parameters, Mapping):
        problems.append((join_path(entry_path, "parameters"),
                         "required: a mapping with clusters, guardTimeRunning, timeScale "
                         "and params"))
        return entry_path, None
    return entry_path, parameters


def _name_problems(name: Any, path: str) -> list[Problem]:
    if not isinstance(name, str):
        return [(path, f"required: the job's name (letters, digits, '_' and '-'), got "
                       f"{quote(name)}")]
    if not re.match(JOB_NAME_PATTERN, name):
        return [(path, f"must match {JOB_NAME_PATTERN} (letters, digits, '_' and '-' only: "
                       f"OpenPAI's rule), got {quote(name)}")]
    if len(name) > MAX_NAME_LENGTH:
        return [(path, f"must be at most {MAX_NAME_LENGTH} characters long, got {len(name)}")]
    return []


def _secrets(value: Any, path: str, limits: Limits, problems: list[Problem]
             ) -> tuple[tuple[str, str], ...]:
    """The secrets, checked without ever quoting a value."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        problems.append((path, "must be a mapping of secret names to strings"))
        return ()
    if len(value) > limits.max_labels:
        problems.append((path, f"must have at most {limits.max_labels} entries, got "
                               f"{len(value)}"))
        return ()
    out: list[tuple[str, str]] = []
    for key, secret in value.items():
        if not isinstance(key, str) or not key or len(key) > limits.max_key_length:
            problems.append((path, f"a secret's name must be a string of 1 to "
                                   f"{limits.max_key_length} characters"))
            continue
        where = join_path(path, key)
        if not isinstance(secret, str):
            problems.append((where, f"must be a string (its value is not shown), got a "
                                    f"{type(secret).__name__}"))
        elif len(secret) > limits.max_string_length:
            problems.append((where, f"must be at most {limits.max_string_length} characters "
                                    f"long (its value is not shown)"))
        else:
            out.append((key, secret))
    return tuple(out)


def _json_problems(value: Any, path: str) -> list[Problem]:
    """What in a template JSON cannot carry (YAML's dates, keys that are no strings,
    non-finite numbers), under its path; the first of each branch."""
    stack: list[tuple[str, Any]] = [(path, value)]
    problems: list[Problem] = []
    while stack and len(problems) < 16:
        where, item = stack.pop()
        if isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    problems.append((where, f"key {quote(key)} must be a string; quote it"))
                else:
                    stack.append((join_path(where, key), child))
        elif isinstance(item, list):
            stack.extend((join_path(where, i), child) for i, child in enumerate(item))
        elif isinstance(item, date):
            problems.append((where, f"YAML reads {quote(str(item))} as a date; quote it to "
                                    f"keep it text"))
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append((where, f"must be a finite number, got {quote(item)}"))
        elif not isinstance(item, str | int | float | bool) and item is not None:
            problems.append((where, f"cannot hold a {type(item).__name__}"))
    return problems


# ---- the shared fields --------------------------------------------------------------------

def _job(log: IssueLog, doc: DocRef, name: str, form: JobForm, spec: SuperSchedulerSpec,
         template: dict[str, Any], secrets: tuple[tuple[str, str], ...], base: str,
         limits: Limits) -> MultiClusterJob | None:
    problems: list[Problem] = []
    members = _members(spec, name, join_path(base, "clusters"), problems)
    params_path = join_path(base, "params")
    params = _params(spec.params, members, params_path, limits, problems)
    times = []
    for field, value in (("guardTimeRunning", spec.guard_time_running),
                         ("timeScale", spec.time_scale)):
        try:
            times.append(minutes_or_duration(value))
        except ValueError as exc:
            problems.append((join_path(base, field), str(exc)))
    for path, message in problems:
        log.add(doc, path, message)
    if problems:
        return None
    return MultiClusterJob(
        name=name, form=form, members=members, policy=spec.policy,
        guard_time_running_s=times[0], time_scale_s=times[1], params=params,
        template=json.dumps(template, ensure_ascii=False, separators=(",", ":")),
        secrets=secrets, source=doc.source, params_path=params_path)


def _members(spec: SuperSchedulerSpec, name: str, path: str, problems: list[Problem]
             ) -> tuple[MemberRef, ...]:
    raw = spec.clusters
    members: list[MemberRef] = []
    if isinstance(raw, Mapping):
        mapped = _validated(MappedClusters, {"clusters": raw}, _parent(path), problems)
        if mapped is not None:
            members = [MemberRef(alias, c.uri, c.user, c.priority)
                       for alias, c in mapped.clusters.items()]
    elif isinstance(raw, list):
        listed = _validated(ListedClusters, {"clusters": raw}, _parent(path), problems)
        if listed is not None:
            members = [MemberRef(c.alias if c.alias is not None else c.uri, c.uri, c.user,
                                 c.priority) for c in listed.clusters]
    else:
        problems.append((path, "must map each alias to {uri, user, priority}, or list "
                               "{alias, uri, user, priority}"))
        return ()
    if not members:
        if raw is not None and len(raw) == 0:
            problems.append((path, "must name at least one cluster"))
        return ()
    if len(members) > MAX_CLUSTERS:
        problems.append((path, f"must name at most {MAX_CLUSTERS} clusters, got "
                               f"{len(members)}"))
        return ()
    by_safe: dict[str, str] = {}
    for i, member in enumerate(members):
        where = join_path(path, member.alias if isinstance(raw, Mapping) else i)
        safe = safe_alias(member.alias)
        if any(m.alias == member.alias for m in members[:i]):
            problems.append((where, f"alias {quote(member.alias)} is given twice; aliases "
                                    f"are unique (they default to the URI)"))
        elif not safe:
            problems.append((where, f"alias {quote(member.alias)} has nothing a job name may "
                                    f"hold (letters, digits, '_', '-')"))
        elif safe in by_safe:
            problems.append((where, f"aliases {quote(by_safe[safe])} and "
                                    f"{quote(member.alias)} both name their copies "
                                    f"{quote(f'{name}-{safe}')}; rename one"))
        elif len(name) + 1 + len(safe) > MAX_NAME_LENGTH:
            problems.append((where, f"the copy's name {quote(f'{name}-{safe}')} would be "
                                    f"longer than {MAX_NAME_LENGTH} characters"))
        by_safe.setdefault(safe, member.alias)
    return tuple(members)


def _params(params: Mapping[str, Any], members: tuple[MemberRef, ...], path: str,
            limits: Limits, problems: list[Problem]) -> tuple[Param, ...]:
    if len(params) > MAX_PARAMS:
        problems.append((path, f"must have at most {MAX_PARAMS} parameters, got "
                               f"{len(params)}"))
        return ()
    aliases = [m.alias for m in members]
    out: list[Param] = []
    for name, by_alias in params.items():
        where = join_path(path, name)
        if not PARAM_NAME.match(name):
            problems.append((where, f"a parameter's name must match {PARAM_NAME.pattern}, "
                                    f"got {quote(name)}"))
            continue
        if not isinstance(by_alias, Mapping):
            problems.append((where, "must map each cluster's alias to its value"))
            continue
        for alias in by_alias:
            if alias not in aliases:
                problems.append((join_path(where, str(alias)),
                                 f"names no cluster; the clusters are "
                                 f"{', '.join(quote(a) for a in aliases)}"))
        values: list[tuple[str, str]] = []
        for alias in aliases:
            if alias not in by_alias:
                problems.append((where, f"no value for cluster {quote(alias)}"))
                continue
            problem = _value_problem(by_alias[alias], limits)
            if problem is not None:
                problems.append((join_path(where, alias), problem))
                continue
            values.append((alias, json.dumps(by_alias[alias], ensure_ascii=False)))
        out.append(Param(name, tuple(values)))
    return tuple(out)


def _value_problem(value: Any, limits: Limits) -> str | None:
    if value is None or isinstance(value, Mapping):
        return (f"must be a scalar or a list, got "
                f"{'nothing' if value is None else 'a mapping'}")
    if isinstance(value, list) and len(value) > MAX_PARAM_ITEMS:
        return f"must have at most {MAX_PARAM_ITEMS} items, got {len(value)}"
    json_problems = _json_problems(value, "")
    if json_problems:
        return json_problems[0][1]
    text = json.dumps(value, ensure_ascii=False)
    if LEFTOVER.search(text):
        return "a parameter's value may not hold a <% $mcc %> placeholder itself"
    if len(text) > limits.max_string_length * 4:
        return f"is longer than {limits.max_string_length * 4} characters as JSON"
    return None
