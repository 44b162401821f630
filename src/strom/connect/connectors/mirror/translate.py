"""Offset translation, as MirrorMaker 2 does it: ``OffsetSyncStore`` turns a source partition's
committed offset into its remote topic's offset from the offset syncs (the checkpoint
connector), and ``remote_consumer_offsets`` reads a group's offsets on the target from the
checkpoints (``RemoteClusterUtils.translateOffsets``). Pure: records in, offsets out."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from strom.connect.connectors.mirror.formats import Checkpoint, OffsetSync

__all__ = ["OffsetSyncStore", "batch_syncs", "remote_consumer_offsets"]

SYNCS_PER_BATCH = 64
"""At most this many offset syncs between a partition's first and last in one batch."""
SYNCS_KEPT = 1024
"""Offset syncs kept per partition (the oldest go first): enough to translate the offsets
of groups lagging far behind without keeping every sync since the mirror started."""


@dataclass
class OffsetSyncStore:
    """The offset syncs of each source partition, in upstream order."""

    _syncs: dict[tuple[str, int], list[OffsetSync]] = field(default_factory=dict)

    def apply(self, sync: OffsetSync) -> None:
        """Add a sync read from the offset-syncs topic. A sync below earlier ones (the mirror
        went back, after a restart or a truncated target) drops the ones it contradicts."""
        syncs = self._syncs.setdefault((sync.topic, sync.partition), [])
        while syncs and (
            syncs[-1].upstream >= sync.upstream or syncs[-1].downstream >= sync.downstream
        ):
            syncs.pop()
        syncs.append(sync)
        if len(syncs) > SYNCS_KEPT:
            del syncs[: len(syncs) - SYNCS_KEPT]

    def translate_downstream(self, topic: str, partition: int, upstream: int) -> int | None:
        """The offset a consumer at ``upstream`` of the source partition resumes from on its
        remote topic: exact at a sync's offset, else one past the nearest sync below (what it
        read after that sync is read again: duplicates, never loss). None without a sync at or
        below ``upstream``."""
        syncs = self._syncs.get((topic, partition))
        if not syncs:
            return None
        index = bisect.bisect_right([s.upstream for s in syncs], upstream) - 1
        if index < 0:
            return None
        sync = syncs[index]
        return sync.downstream + (0 if sync.upstream == upstream else 1)


def remote_consumer_offsets(
    checkpoints: Iterable[Checkpoint], group: str
) -> dict[tuple[str, int], int]:
    """A group's offsets on the target cluster, from its checkpoints read in order (the
    newest of each partition wins): ``{(topic, partition): offset}``."""
    return {
        (checkpoint.topic, checkpoint.partition): checkpoint.downstream
        for checkpoint in checkpoints
        if checkpoint.group == group
    }


def batch_syncs(
    topic: str, partition: int, *, first: int, last: int, count: int, end: int, lag_max: int
) -> list[OffsetSync]:
    """The offset syncs of one partition's records in one copied batch: upstream offsets
    ``first``..``last`` (``count`` records), written in order at the end of a remote partition
    now ending at ``end``. The first and last always; between them, when the upstream offsets
    have no gaps (so each record's downstream offset is known without reading it), one every
    ``lag_max`` records (MM2's ``offset.lag.max``), at most ``SYNCS_PER_BATCH``."""
    start = end - count
    syncs = [OffsetSync(topic, partition, first, start)]
    if last - first + 1 == count:
        step = max(lag_max, 1, -(-count // SYNCS_PER_BATCH))
        syncs += [
            OffsetSync(topic, partition, first + i, start + i) for i in range(step, count - 1, step)
        ]
    if last != first:
        syncs.append(OffsetSync(topic, partition, last, end - 1))
    return syncs
