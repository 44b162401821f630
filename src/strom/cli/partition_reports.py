"""``strom topics describe``'s partition reports, as ``kafka-topics.sh --describe`` filters them:
under-replicated, under or at ``min.insync.replicas``, unavailable.

Pure: a partition's leader, replicas and ISR, the brokers alive, and the topic's
``min.insync.replicas`` in; whether it is reported out (Kafka's ``PartitionDescription``).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["PartitionState", "Report"]


class Report(enum.Enum):
    UNDER_REPLICATED = "under-replicated-partitions"
    UNDER_MIN_ISR = "under-min-isr-partitions"
    AT_MIN_ISR = "at-min-isr-partitions"
    UNAVAILABLE = "unavailable-partitions"


@dataclass(frozen=True)
class PartitionState:
    leader: int | None
    """None when the partition has no leader."""
    replicas: Sequence[int]
    isr: Sequence[int]

    def offline(self, live_brokers: Collection[int]) -> list[int]:
        """Replicas on brokers that are not alive (not registered, or fenced)."""
        return [replica for replica in self.replicas if replica not in live_brokers]

    def reported(self, report: Report, *, live_brokers: Collection[int], min_isr: int) -> bool:
        match report:
            case Report.UNDER_REPLICATED:
                return self.leader is not None and len(self.isr) < len(self.replicas)
            case Report.UNDER_MIN_ISR:
                return self.leader is None or len(self.isr) < min_isr
            case Report.AT_MIN_ISR:
                return len(self.isr) == min_isr
            case Report.UNAVAILABLE:
                return self.leader is None or self.leader not in live_brokers
