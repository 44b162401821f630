"""Replication throttles (Kafka's ``ReplicationQuotaManager``, KIP-73): a bytes-per-second
bound on what a broker sends to followers (leader side) or fetches as a follower, applied only
to the replicas the topics name and only while they are out of sync, so that moving a
partition does not starve the cluster while the ISR keeps up at full speed.

* The bounds are the brokers' dynamic settings ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` (bytes/s; unset: no bound).
* The throttled replicas are the topics' ``leader.replication.throttled.replicas`` and
  ``follower.replication.throttled.replicas``: ``*`` (every replica) or ``partition:broker``
  entries; a broker throttles the partitions whose entries name it.
  ``strom partitions reassign --throttle`` sets both for a move and ``--verify`` removes them.
* The rate is measured over ``replication.quota.window.num`` windows of
  ``replication.quota.window.size.seconds``, as Kafka's sampled rate
  (``strom.common.sampled_rate``).
* A leader answers a throttled out-of-sync follower's partition with no records while the
  quota is exceeded; a follower leaves such partitions out of its fetch. Both record the bytes
  of throttled partitions they move.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Final

from strom.common import Clock, TopicPartition
from strom.common.sampled_rate import SampledRate
from strom.config import ServerConfig
from strom.config.setting import LONG_MAX
from strom.metadata import MetadataImage

__all__ = [
    "EVERY_REPLICA",
    "FOLLOWER_THROTTLED_REPLICAS",
    "LEADER_THROTTLED_REPLICAS",
    "ReplicationQuota",
    "quota_settings",
    "throttled_partitions",
]

LEADER_THROTTLED_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS: Final = "follower.replication.throttled.replicas"
EVERY_REPLICA: Final = "*"


def quota_settings(
    server: ServerConfig, image: MetadataImage, broker_id: int, name: str
) -> tuple[float, dict[str, frozenset[int] | None]]:
    """One direction's bound and throttled partitions on ``broker_id`` as of ``image``:
    ``name`` is ``leader`` or ``follower``; ``server`` holds the broker's dynamic settings."""
    rate = server.get_int(f"{name}.replication.throttled.rate")
    bound = math.inf if rate >= LONG_MAX else float(rate)
    key = f"{name}.replication.throttled.replicas"
    throttled = {}
    for topic in image.topics.topics_by_name:
        entries = image.topic_configs(topic).get(key)
        if entries:
            throttled[topic] = throttled_partitions(entries.split(","), broker_id)
    return bound, throttled


def throttled_partitions(entries: Iterable[str], broker_id: int) -> frozenset[int] | None:
    """The partitions a throttled-replicas list names on ``broker_id``; None for ``*``."""
    partitions: set[int] = set()
    for entry in entries:
        if entry.strip() == EVERY_REPLICA:
            return None
        partition, _, broker = entry.partition(":")
        if broker.strip() == str(broker_id) and partition.strip().isdigit():
            partitions.add(int(partition))
    return frozenset(partitions)


class ReplicationQuota:
    """One direction's bound (leader or follower) on one broker."""

    def __init__(self, clock: Clock, *, windows: int = 11, window_ms: int = 1000) -> None:
        self._clock = clock
        self._rate = SampledRate(windows=windows, window_ms=window_ms)
        self.bound = math.inf
        """Bytes per second."""
        self._throttled: dict[str, frozenset[int] | None] = {}
        """Topic -> throttled partitions (None: all of them)."""

    def configure(self, bound: float, throttled: Mapping[str, frozenset[int] | None]) -> None:
        self.bound = bound
        self._throttled = {
            topic: parts for topic, parts in throttled.items() if parts is None or parts
        }

    def is_throttled(self, tp: TopicPartition) -> bool:
        if tp.topic not in self._throttled:
            return False
        partitions = self._throttled[tp.topic]
        return partitions is None or tp.partition in partitions

    def is_quota_exceeded(self) -> bool:
        return self.bound != math.inf and self.rate() > self.bound

    def holds_back(self, tp: TopicPartition, *, in_sync: bool) -> bool:
        """Kafka's ``shouldLeaderThrottle`` / ``shouldFollowerThrottle``: a replica out of
        sync that its topic throttles moves nothing while the quota is exceeded."""
        return not in_sync and self.is_throttled(tp) and self.is_quota_exceeded()

    def record(self, tp: TopicPartition, size: int) -> None:
        """Count ``size`` bytes moved for ``tp`` (only a throttled partition's count)."""
        if size <= 0 or not self.is_throttled(tp):
            return
        self._rate.record(size, self._clock.monotonic_ms())

    def rate(self) -> float:
        """Bytes per second over the windows kept."""
        return self._rate.rate(self._clock.monotonic_ms())
