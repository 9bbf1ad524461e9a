"""A multi-cluster job (seed 000) as one typed, frozen value: its name, the form it was
written in, the members it names, its dispatch policy and times, its parameters per member,
its secrets and its template. Reading one is `shoal.spec.multicluster_read`'s; turning it
into one member's copy is `shoal.spec.specialise`'s.

Two forms say the same thing: OpenPAI's `protocolVersion: super-2` document, whose
`super_scheduler` runtime plugin entry names the clusters, and Shoal's own
`apiVersion: shoal/v1, kind: MultiClusterJob`, whose template is a Shoal Job's spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from shoal.api.federation import DispatchPolicy
from shoal.spec.multicluster_fields import safe_alias

SUPER_2 = "super-2"
"""The `protocolVersion` of an OpenPAI multi-cluster job."""
MULTI_CLUSTER_KIND = "MultiClusterJob"
SUPER_SCHEDULER = "super_scheduler"
"""The runtime plugin entry of a `super-2` job that names its clusters."""
RUNTIME_PLUGINS = "com.microsoft.pai.runtimeplugin"


class JobForm(StrEnum):
    """Which of the two forms a multi-cluster job was written in, which decides what its
    copies are: OpenPAI protocol v2 documents, or Shoal Job documents."""

    SUPER_2 = "super-2"
    SHOAL = "shoal"

    @property
    def document_kind(self) -> str:
        """`CopyRequest.document_kind` of its copies."""
        return "openpai-v2" if self is JobForm.SUPER_2 else "shoal"


def is_multicluster(data: Any) -> bool:
    """Whether a read document is a multi-cluster job, in either form."""
    if not isinstance(data, Mapping):
        return False
    return data.get("protocolVersion") == SUPER_2 or data.get("kind") == MULTI_CLUSTER_KIND


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A member as the job names it. The registry holds the rest (kind, GPU type,
    credentials); `priority` here is the user's own preference, where given."""

    alias: str
    uri: str
    user: str | None = None
    priority: int | None = None

    @property
    def safe_alias(self) -> str:
        """The alias as the copy's name carries it (`shoal.spec.multicluster_fields.safe_alias`)."""
        return safe_alias(self.alias)


@dataclass(frozen=True, slots=True)
class Param:
    """One `$mcc` parameter: its value on each member, kept as JSON text so that the value
    stays immutable whatever it holds (a list of storage names, a mapping per item)."""

    name: str
    values: tuple[tuple[str, str], ...]
    """(alias, the value as JSON text), in the members' order."""

    def value(self, alias: str) -> Any:
        """The value on the member `alias` (a fresh copy: callers may change it)."""
        for member, text in self.values:
            if member == alias:
                return json.loads(text)
        raise KeyError(alias)

    def aliases(self) -> tuple[str, ...]:
        return tuple(member for member, _ in self.values)


@dataclass(frozen=True, slots=True)
class MultiClusterJob:
    """A validated multi-cluster job: every member has a value for every parameter, every
    placeholder names a parameter, and the aliases' name-safe forms are distinct."""

    name: str
    form: JobForm
    members: tuple[MemberRef, ...]
    policy: DispatchPolicy
    guard_time_running_s: float
    """How long the earliest running copy must stay RUNNING before it is kept."""
    time_scale_s: float
    """FAC with priority: seconds of survival per point of priority difference."""
    params: tuple[Param, ...]
    template: str = field(repr=False)
    """The document every copy is made from, as JSON text: the whole OpenPAI document less
    its secrets (the `super_scheduler` entry is dropped per copy), or a Shoal Job document
    whose spec is the template."""
    secrets: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    source: str = "<string>"
    """Where the job was read from, for the messages of its specialisation."""
    params_path: str = "params"
    """Where `params` sits in the document as written, for messages about a parameter."""

    def member(self, alias: str) -> MemberRef | None:
        return next((m for m in self.members if m.alias == alias), None)

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(m.alias for m in self.members)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def copy_name(self, alias: str) -> str:
        """`<name>-<alias>`, the alias in its name-safe form."""
        return f"{self.name}-{safe_alias(alias)}"

    @property
    def kind_label(self) -> str:
        """How messages name the document: its kind, or OpenPAI's `super-2`."""
        return MULTI_CLUSTER_KIND if self.form is JobForm.SHOAL else SUPER_2

    def template_data(self) -> dict[str, Any]:
        """The template as data (a fresh copy)."""
        data: dict[str, Any] = json.loads(self.template)
        return data
