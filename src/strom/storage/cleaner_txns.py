"""What a compaction pass needs to know about transactions (Kafka's
``CleanedTransactionMetadata``).

A pass walks the log from its start in offset order. The aborted transactions of the range
(from the segments' ``.txnindex``, collected on the owner thread when the pass is chosen) say
which data batches belong to an aborted transaction: the cleaner drops them whole. The walk
also remembers, per producer id, whether a data batch of its current transaction was seen since
its last marker: a marker is *discardable* only when none was (its transaction has no data left
in the log), and then goes after ``delete.retention.ms`` (the cleaner stamps the horizon on
the marker first, as for tombstones), so a consumer that read the transaction's records before
they were compacted away still finds the marker.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from strom.protocol.batch import BatchHeader
from strom.storage.txn_index import AbortedTxn

__all__ = ["CleanedTransactions"]


class CleanedTransactions:
    """Aborted ranges by producer, and the producers with data seen since their last marker."""

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        ranges: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        for spans in ranges.values():
            spans.sort()
        self._ranges = ranges
        self._firsts = {pid: [first for first, _ in spans] for pid, spans in ranges.items()}
        self._with_data: set[int] = set()

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether a (transactional, data) batch belongs to an aborted transaction."""
        if not header.is_transactional or header.is_control or header.producer_id < 0:
            return False
        firsts = self._firsts.get(header.producer_id)
        if not firsts:
            return False
        at = bisect.bisect_right(firsts, header.base_offset) - 1
        return at >= 0 and header.base_offset <= self._ranges[header.producer_id][at][1]

    def on_data_batch(self, header: BatchHeader) -> None:
        """A data batch was read (kept or not) in this pass; one emptied by an earlier pass
        (kept for the producer's state) holds no data to protect."""
        if header.is_transactional and header.producer_id >= 0 and header.record_count:
            self._with_data.add(header.producer_id)

    def on_marker(self, header: BatchHeader) -> bool:
        """A marker was read; whether it is discardable (no data of its transaction seen)."""
        producer_id = header.producer_id
        discardable = producer_id not in self._with_data
        self._with_data.discard(producer_id)
        return discardable
