"""The JSON shapes of the admin routes (issue 21): a user's update, a new token, tokens
revoked, a job's new priority class, and the audit log's pages (`shoal.server.admin`,
`shoal.server.node_admin`, `shoal.server.audit`)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from shoal.server.models import MAX_USER_QUEUES, QueueName
from shoal.spec.document_types import OBJECT_NAME_PATTERN
from shoal.store.audit import AuditEntry

#: The longest priority-class name a request may name (a Kubernetes name).
MAX_CLASS_NAME = 253


class UserPatchIn(BaseModel):
    """What changes of a user; a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")
    admin: bool | None = None
    queues: list[QueueName] | None = \
        Field(default=None, max_length=MAX_USER_QUEUES,
              description="The queues (virtual clusters) the user may submit to, replaced.")


class TokenOut(BaseModel):
    name: str
    token: str = Field(description="The new bearer token: shown once, never stored.")


class RevokedOut(BaseModel):
    revoked: int = Field(description="How many tokens were revoked.")


class PriorityIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    priority_class: str = Field(alias="priorityClass", min_length=1,
                                max_length=MAX_CLASS_NAME, pattern=OBJECT_NAME_PATTERN,
                                description="A stored or built-in priority class.")


class AuditEntryOut(BaseModel):
    id: int = Field(description="Orders the log; pass the last one's as `after`.")
    at: str = Field(description="When, in UTC (ISO 8601).")
    actor: str = Field(description="Who: a user's name, or `shoal` for the control loop.")
    action: str = Field(description="`<kind>.<verb>`, such as `node.drain`.")
    target: str
    detail: str


class AuditPageOut(BaseModel):
    items: list[AuditEntryOut] = Field(description="Newest first.")
    next: int | None = Field(description="`after` for the next (older) page; null: none.")


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def audit_entry_out(entry: AuditEntry) -> AuditEntryOut:
    return AuditEntryOut(id=entry.id, at=iso(entry.at), actor=entry.actor,
                         action=entry.action, target=entry.target, detail=entry.detail)
