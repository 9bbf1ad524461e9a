"""What the Kubernetes-shaped importers (Volcano's Job and PodGroup, `batch/v1` Job) share:
reading an object's metadata, refusing the fields a format's table does not know, and
mapping a native task group's paths back to the pod template it came from.

Namespaces are accepted and have no effect: Shoal has no namespaces (its virtual clusters
separate tenants, and a Kueue LocalQueue's name is read as one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.spec.errors import DocRef, IssueLog, join_path, quote

#: Metadata fields read or accepted; anything else (ownerReferences, finalizers, uid ...)
#: is what a cluster writes, not a user, and is refused.
_METADATA = frozenset({"name", "namespace", "labels", "annotations"})


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


def object_meta(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> ObjectMeta | None:
    """The object's name, labels and annotations; None when it has no usable name."""
    meta = data.get("metadata")
    if not isinstance(meta, Mapping):
        log.add(doc, "metadata", "must be a mapping with the object's name")
        return None
    for key in meta:
        if key not in _METADATA:
            log.add(doc, join_path("metadata", str(key)),
                    "is not supported: Shoal reads name, namespace (no effect), labels and "
                    "annotations")
    name = meta.get("name")
    if "generateName" in meta and name is None:
        return None  # refused above; no second message
    if not isinstance(name, str) or not name:
        log.add(doc, "metadata.name", f"must be the job's name, got {quote(name)}")
        return None
    return ObjectMeta(name, strings(log, doc, "metadata", meta, "labels"),
                      strings(log, doc, "metadata", meta, "annotations"))


def strings(log: IssueLog, doc: DocRef, path: str, data: Any, key: str) -> dict[str, str]:
    value = data.get(key) if isinstance(data, Mapping) else None
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        log.add(doc, join_path(path, key), f"must map strings to strings, got {quote(value)}")
        return {}
    return dict(value)


def refuse_unknown(log: IssueLog, doc: DocRef, path: str, data: Mapping[Any, Any],
                   read: frozenset[str], refused: Mapping[str, str], what: str) -> None:
    """Log each key of `data` that is not `read`: with its reason from `refused`, or as a
    field `what` does not have."""
    for key in data:
        if key in read:
            continue
        why = refused.get(str(key))
        log.add(doc, join_path(path, str(key)),
                f"is not supported: {why}" if why is not None
                else f"unknown field of {what}")


def optional_int(log: IssueLog, doc: DocRef, path: str, value: Any, *, least: int = 0
                 ) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        log.add(doc, path, f"must be an integer >= {least}, got {quote(value)}")
        return None
    return value


def group_paths(native: str, template: str) -> dict[str, str]:
    """A native task group's fields → where its pod template (at `template`) says them."""
    container = f"{template}.spec.containers[0]"
    return {f"{native}.resources": f"{container}.resources.requests",
            f"{native}.command": f"{container}.command",
            f"{native}.env": f"{container}.env",
            f"{native}.image": f"{container}.image",
            f"{native}.workingDir": f"{container}.workingDir",
            f"{native}.nodeSelector": f"{template}.spec.nodeSelector"}
