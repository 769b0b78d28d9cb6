"""A bounded, thread-safe memo (least recently used entry evicted first) for pure functions.

Used where a per-request computation is a pure function of its inputs and of one index version
(chat's criteria evaluations and clinical readings, the redactor's output for a text): the owner
holds one memo per version, so a new index version starts with an empty one and nothing computed
for the old version is ever returned.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most `size` results by key; `size` 0 keeps nothing (every call computes)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The remembered value, or None (values are never None)."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        """Remember `value` for `key` (evicting the least recently used entry); returns it."""
        if self.size > 0:
            with self._lock:
                self._entries[key] = value
                self._entries.move_to_end(key)
                if len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return value

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The remembered value for `key`, else `compute()` remembered."""
        value = self.get(key)
        return value if value is not None else self.put(key, compute())

    def __len__(self) -> int:
        return len(self._entries)
