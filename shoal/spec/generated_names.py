"""Generated job names (Kubernetes' `metadata.generateName`): the alphabet and length of the
suffix, the longest prefix, and how a load fills in the names of the documents that ask for
one.

A Job (or Service) document with `metadata.generateName: train-` and no `metadata.name` is
named the prefix plus SUFFIX_LENGTH characters of ALPHABET (Kubernetes' own: no vowels, so
no words, and no look-alikes such as 0/o, 1/l). Given both, `name` wins, as in Kubernetes.

The loader names such documents before validating them (`name_document`) from a
`CountedNames`: deterministic, so that `shoal schedule` and `shoal sim` give the same result
on every run. A running Shoal replaces those names by random ones at submission
(`random_name`, in `shoal.server.jobs`), and draws again when one is taken; it learns which
names were generated, and from which prefix, from `SpecBundle.generated`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' alphabet for generated names (`k8s.io/apimachinery/pkg/util/rand`)."""
SUFFIX_LENGTH = 5
MAX_JOB_NAME = 253
MAX_PREFIX = MAX_JOB_NAME - SUFFIX_LENGTH
"""The longest `generateName`: a generated name must still be a job name."""
_JOB_KINDS = frozenset({"Job", "Service"})


def random_name(prefix: str) -> str:
    """`prefix` and a random suffix (what a running Shoal gives a submission)."""
    return prefix + "".join(secrets.choice(ALPHABET) for _ in range(SUFFIX_LENGTH))


def counted_suffix(n: int) -> str:
    """The `n`-th suffix (0-based) in a fixed order: `bbbbb`, `bbbbc`, …"""
    if not 0 <= n < len(ALPHABET) ** SUFFIX_LENGTH:
        raise ValueError(f"no generated suffix number {n}")
    digits = []
    for _ in range(SUFFIX_LENGTH):
        n, digit = divmod(n, len(ALPHABET))
        digits.append(ALPHABET[digit])
    return "".join(reversed(digits))


class CountedNames:
    """Deterministic names for one load: each prefix counts from `bbbbb`, skipping the names
    given to it as taken (`take`)."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}
        self._taken: set[str] = set()

    def take(self, name: str) -> None:
        self._taken.add(name)

    def __call__(self, prefix: str) -> str:
        n = self._next.get(prefix, 0)
        while (name := prefix + counted_suffix(n)) in self._taken:
            n += 1
        self._next[prefix] = n + 1
        self._taken.add(name)
        return name


def generate_prefix(data: Any) -> str | None:
    """The `metadata.generateName` of a job document that has no `metadata.name`; None
    when it names itself or asks for nothing. A prefix that validation refuses (under
    `metadata.generateName`, its issue alone: `shoal.spec.messages`) makes a name that is
    never used."""
    kind = data.get("kind") if isinstance(data, Mapping) else None
    if not isinstance(kind, str) or kind not in _JOB_KINDS:
        return None
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping) or "name" in metadata:
        return None
    prefix = metadata.get("generateName")
    if not isinstance(prefix, str) or len(prefix) > MAX_PREFIX:
        return None
    return prefix


def given_name(data: Any) -> str | None:
    """The `metadata.name` a document gives itself, if any."""
    metadata = data.get("metadata") if isinstance(data, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else None


def named(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A copy of the document with `metadata.name` set to `name`."""
    return {**data, "metadata": {**data["metadata"], "name": name}}
