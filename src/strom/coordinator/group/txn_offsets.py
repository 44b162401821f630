"""Offsets committed inside transactions that are not decided yet (Kafka's
``OffsetMetadataManager.pendingTransactionalOffsets`` with its ``openTransactionsByGroup``).

TxnOffsetCommit writes a group's offsets to ``__consumer_offsets`` in a transactional batch of
the producer; here they wait, per producer id and group, until the producer's transaction marker
lands in the group's partition: COMMIT makes them the group's committed offsets, ABORT drops
them. Until then the partition counts as pending (OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT).

A non-transactional commit or a tombstone of the same group and partition written after a
pending offset beats it: Kafka keeps the commit with the higher record offset when the
transaction commits; the coordinator applies writes in log order, so the later write simply
cancels the pending value (:meth:`PendingTransactionalOffsets.supersede`). The partition stays
pending until the marker all the same, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from strom.coordinator.group.group import OffsetAndMetadata

__all__ = ["PendingTransactionalOffsets"]

PartitionKey = tuple[str, int]
"""(topic, partition)"""


class PendingTransactionalOffsets:
    """The undecided transactional offsets of every group (see the module docs)."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, dict[PartitionKey, OffsetAndMetadata | None]]] = {}
        """producer id -> group -> partition -> offset (None: superseded by a later write)."""
        self._producers_by_group: dict[str, set[int]] = {}

    def add(
        self, producer_id: int, group_id: str, offsets: Mapping[PartitionKey, OffsetAndMetadata]
    ) -> None:
        """``producer_id`` wrote ``offsets`` for ``group_id`` in its ongoing transaction."""
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
        self._producers_by_group.setdefault(group_id, set()).add(producer_id)

    def supersede(self, group_id: str, partitions: Iterable[PartitionKey]) -> None:
        """A non-transactional commit or a tombstone of these partitions was written after the
        pending offsets: a later COMMIT does not bring those back."""
        producers = self._producers_by_group.get(group_id)
        if not producers:
            return
        wanted = list(partitions)
        for producer_id in producers:
            pending = self._by_producer[producer_id][group_id]
            for key in wanted:
                if key in pending:
                    pending[key] = None

    def complete(
        self, producer_id: int, in_partition: Callable[[str], bool]
    ) -> dict[str, dict[PartitionKey, OffsetAndMetadata]]:
        """The marker of ``producer_id`` landed in a ``__consumer_offsets`` partition: forget
        the pending offsets of the groups ``in_partition`` accepts; return those that a COMMIT
        makes the groups' committed offsets (the superseded ones left out)."""
        groups = self._by_producer.get(producer_id)
        if not groups:
            return {}
        decided: dict[str, dict[PartitionKey, OffsetAndMetadata]] = {}
        for group_id in [g for g in groups if in_partition(g)]:
            pending = groups.pop(group_id)
            decided[group_id] = {key: o for key, o in pending.items() if o is not None}
            producers = self._producers_by_group[group_id]
            producers.discard(producer_id)
            if not producers:
                del self._producers_by_group[group_id]
        if not groups:
            del self._by_producer[producer_id]
        return decided

    def forget(self, group_ids: Iterable[str]) -> None:
        """These groups are coordinated elsewhere now: drop their pending offsets (the new
        coordinator replays them from the log)."""
        for group_id in group_ids:
            for producer_id in self._producers_by_group.pop(group_id, ()):
                groups = self._by_producer[producer_id]
                groups.pop(group_id, None)
                if not groups:
                    del self._by_producer[producer_id]

    def is_pending(self, group_id: str, key: PartitionKey) -> bool:
        """Whether an undecided transaction committed an offset of ``key`` for the group."""
        return any(
            key in self._by_producer[producer_id][group_id]
            for producer_id in self._producers_by_group.get(group_id, ())
        )

    def has_open_transactions(self, group_id: str) -> bool:
        return group_id in self._producers_by_group

    def partitions_of(self, group_id: str) -> set[PartitionKey]:
        """The partitions with a pending offset (not superseded) in the group."""
        return {
            key
            for producer_id in self._producers_by_group.get(group_id, ())
            for key, offset in self._by_producer[producer_id][group_id].items()
            if offset is not None
        }
