"""Taking in a multi-cluster job for the live dispatcher (issue 19): read and check it
(`shoal.spec.multicluster_read`), check it against the registry, and split it into what is
stored in the open (its document, secrets taken out) and what is sealed (its secrets); and
the way back after a restart, `restore`.

A job may name only REGISTERED members, at the registry's URI: the server calls the URIs a
job names, so a job that could name any URI would make the server call any address a tenant
chose (with the tenant's or, worse, the registry's credentials). A member the registry does
not hold, or one named at another URI, is refused with the field path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from shoal.api.federation import MemberCluster
from shoal.federation.registry import ClusterRegistry
from shoal.spec.errors import DocRef, IssueLog, SpecError, join_path, quote
from shoal.spec.limits import DEFAULT_LIMITS, Limits
from shoal.spec.multicluster import JobForm, MultiClusterJob
from shoal.spec.multicluster_read import multicluster_from_data, read_multicluster_text
from shoal.spec.specialise import all_copies_problems


@dataclass(frozen=True, slots=True)
class Intake:
    """A checked job: the value, its document without secrets (JSON text), its secrets."""

    job: MultiClusterJob
    document: str
    secrets: tuple[tuple[str, str], ...] = field(repr=False)


def take_in(text: str, registry: ClusterRegistry, *, source: str = "request",
            limits: Limits = DEFAULT_LIMITS) -> Intake:
    """Read a `super-2` or `MultiClusterJob` document (YAML or JSON text) and check its
    members against the registry; `SpecError` with every problem by field path."""
    job = read_multicluster_text(text, source, limits=limits)
    check_members(job, registry)
    problems = all_copies_problems(job, limits)  # every copy must be a valid job of its kind
    if problems:
        raise SpecError(problems)
    data = yaml.safe_load(text)  # read once already, within the limits: cannot fail now
    return Intake(job, json.dumps(_without_secrets(job.form, data), default=str,
                                  ensure_ascii=False, separators=(",", ":")), job.secrets)


def restore(document: str, secrets: tuple[tuple[str, str], ...], *,
            limits: Limits = DEFAULT_LIMITS) -> MultiClusterJob:
    """The job a stored document and its unsealed secrets make (after a restart)."""
    data = json.loads(document)
    if secrets:
        holder = data if data.get("protocolVersion") is not None else data["spec"]
        holder["secrets"] = dict(secrets)
    return multicluster_from_data(data, "stored", limits=limits)


def check_members(job: MultiClusterJob, registry: ClusterRegistry) -> None:
    log = IssueLog()
    where = DocRef(job.source, 1, job.kind_label, job.name)
    # `params` and `clusters` are siblings, in either form.
    base = job.params_path.removesuffix("params").removesuffix(".")
    clusters = join_path(base, "clusters")
    known = {entry.member.alias: entry.member for entry in registry}
    for ref in job.members:
        path = join_path(clusters, ref.alias)
        member = known.get(ref.alias)
        if member is None:
            names = ", ".join(quote(a) for a in list(known)[:20]) or "none"
            log.add(where, path, f"no cluster {quote(ref.alias)} is registered on this server "
                                 f"(registered: {names}); a job names registered members only")
        elif _norm(ref.uri) != _norm(member.uri):
            log.add(where, join_path(path, "uri"),
                    f"is not the registered URI of cluster {quote(ref.alias)} "
                    f"({quote(member.uri)}); the server calls registered URIs only")
    log.raise_if_any()


def members_of(job: MultiClusterJob, registry: ClusterRegistry) -> tuple[MemberCluster, ...]:
    """The job's members as the policy sees them: the registry's, with the job's own
    priority for a member where it gives one (the user's preference)."""
    out: list[MemberCluster] = []
    for ref in job.members:
        member = registry.get(ref.alias).member
        if ref.priority is not None and ref.priority != member.priority:
            member = MemberCluster(member.alias, member.uri, member.kind, ref.priority,
                                   member.gpu_type)
        out.append(member)
    return tuple(out)


def _norm(uri: str) -> str:
    return uri.strip().rstrip("/").lower()


def _without_secrets(form: JobForm, data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    if form is JobForm.SUPER_2:
        return {k: v for k, v in data.items() if k != "secrets"}
    spec = data.get("spec")
    if isinstance(spec, dict):
        return {**data, "spec": {k: v for k, v in spec.items() if k != "secrets"}}
    return data


def spec_error_lines(exc: SpecError, most: int = 20) -> list[tuple[str, str]]:
    """(path, message) of an error's first issues, for an API answer."""
    return [(issue.path, issue.message) for issue in exc.issues[:most]]
