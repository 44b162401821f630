"""Connector offsets (KIP-875): a source connector's are records of the offsets topic, keyed
``["<connector>", {partition}]``; a sink connector's are the committed offsets of its consumer
group ``connect-<name>``, shown as ``{"kafka_topic", "kafka_partition"}`` ->
``{"kafka_offset"}``. ``SourceOffsets`` is the offsets topic as read (applied by the topic's
reader thread); ``SinkOffsets`` asks the cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from strom.connect.errors import ConnectError
from strom.connect.records import decode, encode, offset_key, parse_offset_key

__all__ = ["SinkOffsets", "SourceOffsets", "parse_offsets_body"]

Json = dict[str, Any]


def _canonical(partition: Mapping[str, Any]) -> str:
    return json.dumps(partition, sort_keys=True, separators=(",", ":"))


class SourceOffsets:
    """Per connector, each source partition's offset in the offsets topic."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[str, tuple[Json, Json]]] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        parsed = parse_offset_key(key)
        if parsed is None:
            return
        connector, partition = parsed
        offsets = self._offsets.setdefault(connector, {})
        if value is None:
            offsets.pop(_canonical(partition), None)
        else:
            offsets[_canonical(partition)] = (partition, decode(value))

    def offset(self, connector: str, partition: Mapping[str, Any]) -> Json | None:
        found = self._offsets.get(connector, {}).get(_canonical(partition))
        return None if found is None else found[1]

    def listed(self, connector: str) -> list[Json]:
        """``GET /connectors/{name}/offsets``' entries."""
        return [
            {"partition": partition, "offset": offset}
            for partition, offset in self._offsets.get(connector, {}).values()
        ]

    def records(
        self, connector: str, entries: Sequence[tuple[Json, Json | None]] | None
    ) -> list[tuple[bytes, bytes | None]]:
        """The records that set these offsets (None: reset every partition of the connector)."""
        if entries is None:
            entries = [(p, None) for p, _ in self._offsets.get(connector, {}).values()]
        return [(offset_key(connector, p), encode(o)) for p, o in entries]


def parse_offsets_body(body: Any) -> list[tuple[Json, Json | None]]:
    """The ``{"offsets": [{"partition": {...}, "offset": {...} | null}]}`` of a PATCH."""
    entries = body.get("offsets") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ConnectError.bad_request(
            "The offsets to alter must be a non-empty list under 'offsets'"
        )
    parsed = []
    for entry in entries:
        partition = entry.get("partition") if isinstance(entry, dict) else None
        offset = entry.get("offset") if isinstance(entry, dict) else None
        if not isinstance(partition, dict) or not (offset is None or isinstance(offset, dict)):
            raise ConnectError.bad_request(
                "Each offset must have a 'partition' object and an 'offset' object or null"
            )
        parsed.append((partition, offset))
    return parsed


class SinkOffsets:
    """A sink connector's consumer group offsets (and the cluster's id), through the admin
    client."""

    def __init__(self, client: Mapping[str, Any], timeout: float) -> None:
        self._admin = AdminClient(dict(client))
        self.timeout = timeout

    def _why(self, error: Exception) -> str:
        return str(error) or f"no answer within {self.timeout:g} s"

    def cluster_id(self) -> str | None:
        return self._admin.list_topics(timeout=self.timeout).cluster_id

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        future = self._admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout
        )[group]
        try:
            result = future.result(timeout=self.timeout)
        except (KafkaException, TimeoutError) as error:
            raise ConnectError(
                500, f"Cannot read the offsets of group {group}: {self._why(error)}"
            ) from None
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0 and tp.error is None
        }

    def listed(self, group: str) -> list[Json]:
        return [
            {
                "partition": {"kafka_topic": topic, "kafka_partition": partition},
                "offset": {"kafka_offset": offset},
            }
            for (topic, partition), offset in sorted(self.committed(group).items())
        ]

    def starting_offsets(self, group: str, topics: Sequence[str]) -> str:
        """The ``startingOffsets`` of a new query: the group's offsets, earliest elsewhere."""
        committed = self.committed(group)
        if not committed or not topics:
            return "earliest"
        metadata = self._admin.list_topics(timeout=self.timeout)
        spec: dict[str, dict[str, int]] = {}
        for topic in topics:
            found = metadata.topics.get(topic)
            for partition in sorted(found.partitions if found is not None else ()):
                spec.setdefault(topic, {})[str(partition)] = committed.get((topic, partition), -2)
        return json.dumps(spec) if spec else "earliest"

    def alter(self, group: str, entries: Sequence[tuple[Json, Json | None]]) -> None:
        partitions = []
        for partition, offset in entries:
            topic, number = partition.get("kafka_topic"), partition.get("kafka_partition")
            if not isinstance(topic, str) or not isinstance(number, int):
                raise ConnectError.bad_request(
                    "The partition of a sink connector offset must have 'kafka_topic' (a string)"
                    " and 'kafka_partition' (an integer)"
                )
            if offset is None:
                raise ConnectError.bad_request(
                    "strom cannot reset single partitions of a sink connector yet: reset them"
                    " all with DELETE /connectors/{name}/offsets"
                )
            value = offset.get("kafka_offset")
            if not isinstance(value, int) or value < 0:
                raise ConnectError.bad_request(
                    "The offset of a sink connector must have 'kafka_offset', a non-negative"
                    " integer"
                )
            partitions.append(KafkaTopicPartition(topic, number, value))
        future = self._admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=self.timeout
        )[group]
        try:
            result = future.result(timeout=self.timeout)
        except (KafkaException, TimeoutError) as error:
            raise ConnectError(
                500, f"Cannot alter the offsets of group {group}: {self._why(error)}"
            ) from None
        refused = [tp for tp in result.topic_partitions or [] if tp.error is not None]
        if refused:
            first = refused[0]
            raise ConnectError.bad_request(
                f"Cannot alter the offset of {first.topic}-{first.partition}: {first.error.str()}"
            )

    def reset(self, group: str) -> None:
        future = self._admin.delete_consumer_groups([group], request_timeout=self.timeout)[group]
        try:
            future.result(timeout=self.timeout)
        except (KafkaException, TimeoutError) as error:
            if "GROUP_ID_NOT_FOUND" not in str(error):
                raise ConnectError(
                    500, f"Cannot reset the offsets of group {group}: {self._why(error)}"
                ) from None
