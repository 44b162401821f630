"""The Python API of consumer failover (MM2's ``RemoteClusterUtils``): a group's offsets on
the cluster it fails over to, from the checkpoints the mirror wrote there, and the clusters a
cluster mirrors from (its remote topics' and heartbeats' sources)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from strom.common import TopicPartition
from strom.connect.connectors.mirror.formats import Checkpoint
from strom.connect.connectors.mirror.policy import replication_policy
from strom.connect.connectors.mirror.translate import remote_consumer_offsets

__all__ = ["MirrorClientError", "commit_offsets", "translate_offsets", "upstream_clusters"]


class MirrorClientError(RuntimeError):
    """The target cannot answer: the message says why, in one line."""


def translate_offsets(
    client: Mapping[str, Any],
    source: str,
    group: str,
    *,
    policy: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> dict[TopicPartition, int]:
    """``RemoteClusterUtils.translateOffsets``: where ``group`` resumes on the cluster that
    ``client`` (librdkafka settings) reaches, from the checkpoints of flow ``source`` -> it
    (``<source>.checkpoints.internal``, named by the replication ``policy`` settings):
    ``{TopicPartition(remote topic, partition): offset}``, empty without checkpoints."""
    topic = replication_policy(policy or {}).checkpoints_topic(source)
    return {
        TopicPartition(t, p): offset
        for (t, p), offset in remote_consumer_offsets(
            (Checkpoint.decode(k, v) for k, v in _read_all(client, topic, timeout)), group
        ).items()
    }


def upstream_clusters(
    client: Mapping[str, Any], *, policy: Mapping[str, str] | None = None, timeout: float = 30.0
) -> set[str]:
    """``RemoteClusterUtils.upstreamClusters``: the clusters whose heartbeats reach here."""
    names = _admin(client).list_topics(timeout=timeout).topics
    rules = replication_policy(policy or {})
    return {
        source
        for name in names
        if rules.is_heartbeats_topic(name) and (source := rules.topic_source(name)) is not None
    }


def commit_offsets(
    client: Mapping[str, Any],
    group: str,
    offsets: Mapping[TopicPartition, int],
    *,
    timeout: float = 30.0,
) -> None:
    """Commit ``offsets`` (``translate_offsets``') as ``group``'s on the cluster ``client``
    reaches; refused while the group has active members there."""
    admin = _admin(client)
    try:
        description = admin.describe_consumer_groups([group])[group].result(timeout)
        if description.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD):
            raise MirrorClientError(
                f"group {group!r} has active members on {client.get('bootstrap.servers')}:"
                " stop its consumers there first"
            )
        partitions = [KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()]
        request = [ConsumerGroupTopicPartitions(group, partitions)]
        admin.alter_consumer_group_offsets(request)[group].result(timeout)
    except KafkaException as error:
        raise MirrorClientError(
            f"cannot commit {group!r}'s offsets: {error.args[0].str()}"
        ) from None


def _admin(client: Mapping[str, Any]) -> AdminClient:
    return AdminClient(dict(client))


def _read_all(client: Mapping[str, Any], topic: str, timeout: float) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` (all partitions) from the start to the end, in order."""
    consumer = Consumer(
        {
            **client,
            "group.id": f"strom-mirror-client-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        try:
            found = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        except KafkaException as error:
            raise MirrorClientError(
                f"cannot reach {client.get('bootstrap.servers')}: {error.args[0].str()}"
            ) from None
        if found is None or found.error is not None:
            return []
        partitions = sorted(found.partitions)
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        done: set[int] = set()
        records: list[tuple[bytes, bytes]] = []
        while len(done) < len(partitions):
            message: Any = consumer.poll(timeout)
            if message is None:
                raise MirrorClientError(f"no end of {topic} within {timeout} s")
            if message.error() is not None:
                if message.error().code() != KafkaError._PARTITION_EOF:
                    raise MirrorClientError(f"cannot read {topic}: {message.error().str()}")
                done.add(message.partition())
                continue
            if message.key() is not None and message.value() is not None:
                records.append((message.key(), message.value()))
        return records
    finally:
        consumer.close()
