"""The cleaner's offset map: record key -> offset of its latest record in the dirty range.

Kafka's ``SkimpyOffsetMap`` keeps a 16-byte MD5 of each key in a fixed buffer and accepts the
(tiny) risk of a collision dropping a record that was in fact the latest of its key. This map
keeps the keys themselves in a dict, so it is exact: a key is never mistaken for another. Its
size is bounded by an entry count instead of bytes (each entry costs about 100 bytes plus the
key in CPython).

``latest_offset`` is the last offset the map covers: every keyed record of the dirty range at or
below it is in the map. The cleaner keeps every record above it untouched (Kafka's
"past latest offset" rule), which is what makes a partial map (a full one) safe.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_MAX_ENTRIES", "OffsetMap"]

DEFAULT_MAX_ENTRIES: Final = 1_000_000


class OffsetMap:
    """Latest offset per key over ``[start, latest_offset]``; see the module doc."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"an offset map needs room for at least one key, not {max_entries}")
        self.max_entries = max_entries
        self._offsets: dict[bytes, int] = {}
        self.start_offset = 0
        self.latest_offset = -1

    def clear(self, start_offset: int) -> None:
        """Empty the map for a new pass whose dirty range starts at ``start_offset``."""
        self._offsets.clear()
        self.start_offset = start_offset
        self.latest_offset = start_offset - 1

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest of ``key`` (offsets arrive in increasing order)."""
        self._offsets[key] = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 when the dirty range does not hold it."""
        return self._offsets.get(key, -1)

    def __contains__(self, key: bytes) -> bool:
        return key in self._offsets

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def end_offset(self) -> int:
        """The first offset the map does not cover (the next pass's first dirty offset)."""
        return self.latest_offset + 1

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.max_entries
