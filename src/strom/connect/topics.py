"""The worker's internal topics (configs, offsets, status): compacted topics with the settings'
partitions and replication factor, replayed from their start and written with read-your-writes,
as Kafka Connect's ``KafkaBasedLog`` (the plumbing is :class:`strom.client.topic_log.TopicLog`;
this module adds Connect's errors, the Java producer's partitioner, and a start-up that
waits as long as the replay takes)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from strom.client.topic_log import Apply, TopicLogTimeout, TopicLogWriteFailed
from strom.client.topic_log import TopicLog as KafkaTopicLog
from strom.connect.errors import ConnectError

__all__ = ["TopicLog"]

log = logging.getLogger(__name__)


class TopicLog(KafkaTopicLog):
    """One of the worker's topics, whose failures are Connect's 500s."""

    def __init__(
        self,
        *,
        topic: str,
        partitions: int,
        replication_factor: int,
        client: dict[str, Any],
        apply: Apply,
        lock: threading.Lock,
        timeout: float = 30.0,
        read_timeout: float | None = None,
    ) -> None:
        super().__init__(
            topic=topic,
            partitions=partitions,
            replication_factor=replication_factor,
            client=client,
            apply=apply,
            lock=lock,
            # Records land where the Java producer puts them, as Connect's own.
            producer={"partitioner": "murmur2_random"},
            timeout=timeout,
            read_timeout=read_timeout,
        )

    def start(self) -> None:
        """Replay the topic to its end however long that takes, as ``KafkaBasedLog.start``
        does: a slow read (a loaded machine, a broker that stalls) is a warning each
        ``read_timeout``, not the end of the worker."""
        self.open()
        while not self._stopping.is_set():
            try:
                super().catch_up()
            except TopicLogTimeout as timeout:
                log.warning(
                    "%s: read up to %s of its end %s within %g s; still reading",
                    self.topic,
                    self.positions(),
                    timeout.args[0],
                    self.read_timeout,
                )
            else:
                return

    def catch_up(self, targets: dict[int, int] | None = None) -> None:
        try:
            super().catch_up(targets)
        except TopicLogTimeout:
            raise ConnectError(
                500, f"Timed out waiting for the {self.topic} topic to be read to its end"
            ) from None

    def write(self, records: Iterable[tuple[bytes, bytes | None]]) -> dict[int, int]:
        try:
            return super().write(records)
        except TopicLogWriteFailed as failed:
            raise ConnectError(
                500, f"Error writing to the {self.topic} topic: {failed.args[0]}"
            ) from None
