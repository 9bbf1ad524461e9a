"""The fair-share index (seed 002's red-black tree of units): schedulable units ordered by
their fair-share key, with the left-most and the right-most unit in O(log n).

A unit is a live job (`JobInfo`); its key is whatever the caller computes — the fairshare
plugin's weighted running time, then the session's other job-order keys. The index keeps
each unit's key beside it, so a unit whose key changes (it started, grew or shrank) is
re-keyed by removing it under its old key and adding it under the new one; nothing is ever
scanned to answer a decision. `sortedcontainers.SortedKeyList` is the tree: a B-tree-like
list of sorted lists, O(log n) add, remove and access at either end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sortedcontainers import SortedKeyList

Key = tuple[Any, ...]


class FairShareIndex:
    """Unit names ordered by key, smallest (least served) first; names are unique."""

    def __init__(self) -> None:
        self._keys: dict[str, Key] = {}
        # Ties on the key are broken by the name, so the order is total and repeatable.
        self._order: SortedKeyList[str, tuple[Key, str]] = SortedKeyList(key=self._entry)

    def _entry(self, name: str) -> tuple[Key, str]:
        return (self._keys[name], name)

    def add(self, name: str, key: Key) -> None:
        if name in self._keys:
            raise KeyError(f"unit {name!r} is already in the index")
        self._keys[name] = key
        self._order.add(name)

    def remove(self, name: str) -> None:
        """Take the unit out (under the key it was added with). A missing unit is an error."""
        self._order.remove(name)
        del self._keys[name]

    def discard(self, name: str) -> None:
        if name in self._keys:
            self.remove(name)

    def rekey(self, name: str, key: Key) -> None:
        """The unit changed: move it to where `key` sorts."""
        self.remove(name)
        self.add(name, key)

    def key(self, name: str) -> Key:
        return self._keys[name]

    def left_most(self) -> str | None:
        """The unit with the smallest key (the least served), None when empty."""
        return self._order[0] if self._order else None

    def right_most(self) -> str | None:
        """The unit with the largest key (the most served), None when empty."""
        return self._order[-1] if self._order else None

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __iter__(self) -> Iterator[str]:
        """Left to right (seed 002's `Traverse`); do not change the index while iterating."""
        return iter(self._order)

    def reversed(self) -> Iterator[str]:
        """Right to left; do not change the index while iterating."""
        return self._order.islice(reverse=True)
