"""A source connector's offsets, written by its Spark data source to Connect's offsets topic:
the key ``["<connector>", {partition}]``, the value ``{offset}``, each new offset once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Producer

from strom.connect.records import encode, offset_key

__all__ = ["OffsetWriter"]


class OffsetWriter:
    """Writes the offsets of one source partition (``client``: the worker's librdkafka
    settings); ``store`` returns once the offset is written."""

    def __init__(
        self, client: Mapping[str, Any], topic: str, connector: str, partition: Mapping[str, Any]
    ) -> None:
        self.client = dict(client)
        self.topic = topic
        self.key = offset_key(connector, dict(partition))
        self._producer: Producer | None = None
        self._written: Any = None

    def store(self, offset: Mapping[str, Any]) -> None:
        """Write ``offset``; nothing without a topic (a source that writes its offsets in its
        records' transactions, KIP-618)."""
        if offset == self._written or not self.topic:
            return
        if self._producer is None:
            self._producer = Producer(
                {**self.client, "enable.idempotence": True, "partitioner": "murmur2_random"}
            )
        self._producer.produce(self.topic, encode(dict(offset)), self.key)
        self._producer.flush(30)
        self._written = dict(offset)
