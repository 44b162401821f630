"""Brokers that Metadata still lists for a short while after they were fenced (strom's own).

Kafka's Metadata lists only unfenced brokers, so the answer that names a dead leader's successor
is also the first that leaves the dead broker out. librdkafka (2.10+) retires the handle of a
broker left out of an answer before it moves that answer's partitions, and the retiring handle
can undo the move of a partition it still holds (``rd_kafka_broker_fail`` forgets the leader of
a partition whose new leader the main thread has just set): the partition waits for the client's
next leader query, a second later. Listed for :data:`LISTED_AFTER_FENCE_MS` more, the fenced
broker is retired by a later answer, when none of its partitions is on it any more.

That is no more than Kafka does before the fence: it lists a dead broker for its whole session
(``broker.session.timeout.ms``, 9 s). Only the broker list changes: the partitions' leaders,
ISRs and offline replicas are as Kafka's, and DescribeCluster is Kafka's.

Only a fence this broker sees while it serves (its own registration unfenced) counts: a broker
that restarts replays fences from long ago while it catches up, and must not list those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from strom.common import Clock
from strom.metadata import MetadataDelta, MetadataImage

__all__ = ["LISTED_AFTER_FENCE_MS", "RecentlyFenced"]

LISTED_AFTER_FENCE_MS: Final = 5000
"""Longer than a client's longest wait between two leader queries (``retry.backoff.max.ms``,
1 s), far shorter than the session timeout during which Kafka lists a dead broker."""


class RecentlyFenced:
    """A metadata publisher that tells which fenced brokers to list still: those seen fenced
    (unfenced in the image before, fenced in this one, same broker epoch) less than
    :data:`LISTED_AFTER_FENCE_MS` ago, while this broker served."""

    def __init__(self, clock: Clock, own: Callable[[], tuple[int, int]]) -> None:
        """``own``: this broker's id and current broker epoch."""
        self._clock = clock
        self._own = own
        self._unfenced: frozenset[tuple[int, int]] = frozenset()
        """(broker id, epoch) of the unfenced brokers of the image published before."""
        self._fenced_at: dict[tuple[int, int], int] = {}

    def __call__(self, delta: MetadataDelta, image: MetadataImage) -> None:
        brokers = image.cluster.brokers.values()
        now_ms = self._clock.monotonic_ms()
        fenced = {(b.id, b.epoch) for b in brokers if b.fenced}
        if self._own() in self._unfenced:
            for key in fenced & self._unfenced:
                self._fenced_at[key] = now_ms
        self._unfenced = frozenset((b.id, b.epoch) for b in brokers if not b.fenced)
        self._fenced_at = {key: at for key, at in self._fenced_at.items() if key in fenced}

    def listed(self) -> frozenset[int]:
        """The ids of the fenced brokers to list now."""
        now_ms = self._clock.monotonic_ms()
        return frozenset(
            broker_id
            for (broker_id, _), at in self._fenced_at.items()
            if now_ms - at < LISTED_AFTER_FENCE_MS
        )
