"""Specialisation (seed 000): one member's copy of a multi-cluster job. Every
`<% $mcc.x %>` is replaced by that member's value of `x`, the job is renamed
`<name>-<alias>`, an OpenPAI job becomes `protocolVersion: '2'` without its `super_scheduler`
entry and with `extras` for the seed's `extra`, and only the member's own `token-<alias>` is
kept of the `token-*` secrets.

A value replaces the whole YAML node when the node is exactly one placeholder (so a list
stays a list, as the seed's storage example needs); inside a longer string only a scalar is
substituted, as text. A replaced value is never searched for placeholders again (a
parameter's value may hold none: `shoal.spec.multicluster_read`), so a copy is at most the
template plus the values it names, bounded by `Limits.max_values`.

`specialise_document` does the substitution; `specialise` also checks the copy against its
own format and derives the roles a member that takes commands needs
(`shoal.spec.specialise_roles`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.api.federation import CopyRequest
from shoal.spec.errors import MAX_MESSAGE, SpecError, SpecIssue, join_path, quote
from shoal.spec.limits import DEFAULT_LIMITS, Limits, Problem
from shoal.spec.multicluster import (
    RUNTIME_PLUGINS,
    SUPER_SCHEDULER,
    JobForm,
    MultiClusterJob,
)
from shoal.spec.multicluster_fields import LEFTOVER, PLACEHOLDER

TOKEN_PREFIX = "token-"
"""A secret named `token-<alias>` is the credential for member `<alias>` (seed 000)."""
SHOWN_SECRET = "<hidden>"


@dataclass(frozen=True, slots=True)
class SpecialisedDocument:
    """One member's copy as a document, its secrets apart (they never travel inside a
    document that may be printed or logged)."""

    alias: str
    name: str
    form: JobForm
    document: str
    """The copy as JSON text, without secrets."""
    secrets: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.document)
        return data

    def with_secrets(self, *, shown: bool) -> dict[str, Any]:
        """The copy with its secrets put back after `name` (an OpenPAI job's place for
        them), their values `<hidden>` unless `shown`. A Shoal Job has no secrets field:
        its copy is returned as it is."""
        data = self.data()
        if self.form is not JobForm.SUPER_2 or not self.secrets:
            return data
        secrets = {key: value if shown else SHOWN_SECRET for key, value in self.secrets}
        out: dict[str, Any] = {}
        for key, value in data.items():
            out[key] = value
            if key == "name":
                out["secrets"] = secrets
        return out


def source_path(form: JobForm, path: str) -> str:
    """Where a path of a copy is in the document as written: a Shoal copy's `spec` is the
    `MultiClusterJob`'s `spec.template`."""
    if form is JobForm.SHOAL and (path == "spec" or path.startswith(("spec.", "spec["))):
        return "spec.template" + path[len("spec"):]
    return path


def raise_problems(job: MultiClusterJob, problems: list[Problem]) -> None:
    """Raise a SpecError of `problems` (paths already those of the document as written),
    if any."""
    if problems:
        raise SpecError([SpecIssue(job.source, 1, job.kind_label, job.name, path, message)
                         for path, message in problems])


def specialise_document(job: MultiClusterJob, alias: str, *,
                        limits: Limits = DEFAULT_LIMITS) -> SpecialisedDocument:
    """The copy of `job` for member `alias`; raises SpecError naming every field path where
    it cannot be made."""
    problems: list[Problem] = []
    copy = document_for(job, alias, problems, limits)
    raise_problems(job, problems)
    assert copy is not None
    return copy


def document_for(job: MultiClusterJob, alias: str, problems: list[Problem],
                 limits: Limits = DEFAULT_LIMITS) -> SpecialisedDocument | None:
    """As `specialise_document`, adding what goes wrong to `problems` instead of raising."""
    if job.member(alias) is None:
        problems.append(("", f"names no cluster {quote(alias)}; its clusters are "
                             f"{', '.join(quote(a) for a in job.aliases)}"))
        return None
    values: dict[str, Any] = {}
    missing = [param.name for param in job.params if alias not in param.aliases()]
    problems.extend((join_path(job.params_path, name), f"no value for cluster {quote(alias)}")
                    for name in missing)
    if missing:
        return None
    for param in job.params:
        values[param.name] = param.value(alias)
    walk = _Substitution(job, values, limits)
    data = walk.node(job.template_data(), "")
    problems.extend(walk.problems)
    if walk.problems:
        return None
    name = job.copy_name(alias)
    if job.form is JobForm.SUPER_2:
        data = _openpai(data, name)
    else:
        data["metadata"]["name"] = name
    return SpecialisedDocument(alias, name, job.form,
                               json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                               own_secrets(job.secrets, alias))


def own_secrets(secrets: tuple[tuple[str, str], ...], alias: str
                ) -> tuple[tuple[str, str], ...]:
    """The secrets a member's copy keeps: its own `token-<alias>` and every secret that is
    no `token-*` (a registry password the job's image needs), never another member's
    token."""
    own = TOKEN_PREFIX + alias
    return tuple((key, value) for key, value in secrets
                 if not key.startswith(TOKEN_PREFIX) or key == own)


def _openpai(data: dict[str, Any], name: str) -> dict[str, Any]:
    """protocolVersion '2', the copy's name, `extras` for `extra`, no `super_scheduler`
    entry (and no runtime plugin list or `extras` left empty by its going)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "protocolVersion":
            out[key] = "2"
        elif key == "name":
            out[key] = name
        elif key in ("extra", "extras") and isinstance(value, dict):
            extras = _without_super_scheduler(value)
            if extras:
                out["extras"] = extras
        else:
            out[key] = value
    return out


def _without_super_scheduler(extras: dict[str, Any]) -> dict[str, Any]:
    plugins = extras.get(RUNTIME_PLUGINS)
    if not isinstance(plugins, list):
        return extras
    kept = [p for p in plugins
            if not (isinstance(p, dict) and p.get("plugin") == SUPER_SCHEDULER)]
    out = {k: v for k, v in extras.items() if k != RUNTIME_PLUGINS}
    if kept:
        out[RUNTIME_PLUGINS] = kept
    return out


def _size(value: Any) -> int:
    """Values (scalars and collections) in `value`, as `Limits.max_values` counts them."""
    if isinstance(value, dict):
        return 1 + sum(_size(v) + 1 for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_size(v) for v in value)
    return 1


class _Substitution:
    """One walk of a template for one member; paths are those of the document as written."""

    def __init__(self, job: MultiClusterJob, values: Mapping[str, Any], limits: Limits
                 ) -> None:
        self.job = job
        self.values = values
        self.sizes = {name: _size(value) for name, value in values.items()}
        self.limits = limits
        self.produced = 0
        self.over_budget = False
        self.problems: list[Problem] = []

    def at(self, path: str) -> str:
        return source_path(self.job.form, path)

    def node(self, value: Any, path: str) -> Any:
        if self.produced > self.limits.max_values:
            return value
        if isinstance(value, dict):
            self.produced += 1
            out: dict[str, Any] = {}
            for key, item in value.items():
                new_key = self.key(key, path)
                if new_key in out:
                    self.problems.append((self.at(join_path(path, key)),
                                          f"becomes the key {quote(new_key)}, which the "
                                          f"mapping already has"))
                out[new_key] = self.node(item, join_path(path, key))
            return out
        if isinstance(value, list):
            self.produced += 1
            return [self.node(item, join_path(path, i)) for i, item in enumerate(value)]
        if isinstance(value, str):
            return self.text(value, path)
        self.produced += 1
        return value

    def key(self, key: str, path: str) -> str:
        if "$mcc" not in key:
            self.produced += 1
            return key
        new = self.text(key, join_path(path, key), whole=False)
        return new if isinstance(new, str) else key

    def text(self, text: str, path: str, *, whole: bool = True) -> Any:
        if "$mcc" not in text:
            self.produced += 1
            return text
        match = PLACEHOLDER.fullmatch(text) if whole else None
        if match is not None:
            name = match.group(1)
            if name not in self.values:
                self._unknown(name, path)
                return text
            self.produced += self.sizes[name]
            self._check_budget(path)
            return self.values[name]
        self.produced += 1
        out = PLACEHOLDER.sub(lambda m: self._inline(m.group(1), path, m.group(0)), text)
        at = LEFTOVER.search(out)
        if at is not None:
            self.problems.append((self.at(path), f"holds a placeholder that is not resolved: "
                                                  f"{quote(out[at.start():at.start() + 40])}"
                                                  f"; write <% $mcc.NAME %> with NAME a "
                                                  f"parameter"))
        return out

    def _inline(self, name: str, path: str, original: str) -> str:
        if name not in self.values:
            self._unknown(name, path)
            return original.replace("$mcc", "$ mcc")  # not reported twice as unresolved
        value = self.values[name]
        if isinstance(value, list | dict):
            self.problems.append((self.at(path), f"<% $mcc.{name} %> is a list on this "
                                                  f"cluster: a list can replace a whole value "
                                                  f"only, not text inside a longer string"))
            return original.replace("$mcc", "$ mcc")
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        self.produced += len(text) // 64
        self._check_budget(path)
        return text

    def _unknown(self, name: str, path: str) -> None:
        declared = ", ".join(sorted(self.values)) or "none"
        self.problems.append((self.at(path), f"<% $mcc.{name} %> names no parameter; "
                                              f"declared under {self.job.params_path}: "
                                              f"{declared}"))

    def _check_budget(self, path: str) -> None:
        if self.produced > self.limits.max_values and not self.over_budget:
            self.over_budget = True
            self.problems.append((self.at(path), f"the copy would hold more than "
                                        f"{self.limits.max_values} values"))


def specialise(job: MultiClusterJob, alias: str, *,
               limits: Limits = DEFAULT_LIMITS) -> CopyRequest:
    """The request member `alias` is sent: its copy (checked against OpenPAI's protocol v2
    or loaded as a Shoal Job) and the roles derived from it. Raises SpecError naming every
    field path, as written, where the copy cannot be made or is not a valid job."""
    from shoal.spec.specialise_roles import copy_roles

    copy = specialise_document(job, alias, limits=limits)
    roles = copy_roles(job, copy, limits)
    return CopyRequest(job_name=job.name, alias=alias, name=copy.name, roles=roles,
                       document=copy.document, document_kind=job.form.document_kind,
                       secrets=copy.secrets)


def all_copies_problems(job: MultiClusterJob, limits: Limits = DEFAULT_LIMITS
                        ) -> list[SpecIssue]:
    """Every issue of every member's copy (what `shoal mc validate` reports)."""
    def issues_of(alias: str) -> list[Problem]:
        try:
            specialise(job, alias, limits=limits)
        except SpecError as exc:
            return [(issue.path, issue.message) for issue in exc.issues]
        return []
    return [SpecIssue(job.source, 1, job.kind_label, job.name, path, message)
            for path, message in per_member(job, issues_of)]


def per_member(job: MultiClusterJob, problems_of: Callable[[str], list[Problem]]
               ) -> list[Problem]:
    """The problems of every member's copy, each once; one that only some members' copies
    have names them."""
    found: dict[Problem, list[str]] = {}
    for alias in job.aliases:
        for problem in problems_of(alias):
            found.setdefault(problem, []).append(alias)
    out: list[Problem] = []
    for (path, message), aliases in found.items():
        where = ("" if len(aliases) == len(job.aliases)
                 else f" (on cluster {', '.join(quote(a) for a in aliases)})")
        out.append((path, (message + where)[:MAX_MESSAGE]))
    return out
