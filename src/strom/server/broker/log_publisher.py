"""The metadata publisher that keeps the partition logs in line with the metadata image.

Installed on the ``MetadataLoader`` after the metadata log has been replayed, so its first call
carries the whole image as one change; from then on it hears about every committed change:

* partitions of created topics, partitions added to existing ones, and partitions a
  reassignment moves to this node get a log (``LogManager.get_or_create`` with the topic's
  ``LogConfig``);
* logs of deleted topics are deleted, and so are those of partitions a reassignment moved off
  this node;
* when a topic's config overrides change, or the dynamic broker settings that topic defaults
  come from, the affected logs get their new ``LogConfig`` at once (no restart).

:meth:`LogPublisher.remove_strays` runs once at start: a log directory whose partition the image
does not have belongs to a topic deleted while its directory could not be removed (a crash), and
is deleted as Kafka deletes stray logs.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable

from strom.common import TopicPartition
from strom.metadata import ConfigResourceType, MetadataDelta, MetadataImage, TopicImage
from strom.server.configs.log_configs import TopicConfigResolver
from strom.storage.log_manager import LogManager

__all__ = ["LogPublisher"]

log = logging.getLogger(__name__)


class LogPublisher:
    """Creates, deletes and reconfigures partition logs as the metadata says."""

    def __init__(
        self,
        log_manager: LogManager,
        configs: TopicConfigResolver,
        *,
        node_id: int,
        internal_logs: Collection[TopicPartition] = (),
    ) -> None:
        self._log_manager = log_manager
        self._configs = configs
        self._node_id = node_id
        self._internal_logs = frozenset(internal_logs)
        """Logs that are not topic partitions (the metadata log): never touched here."""

    def __call__(self, delta: MetadataDelta, image: MetadataImage) -> None:
        topics = delta.topics_delta
        for topic in topics.deleted_topics.values():
            self._delete_logs(topic)
        if self._broker_configs_changed(delta):
            self._reconfigure(image, image.topics.topics_by_name)
        else:
            changed = delta.configs_delta.changed_topic_names - set(topics.created_topics)
            self._reconfigure(image, changed)
        for topic_delta in topics.changed_topics.values():
            touched = topic_delta.new_partitions | topic_delta.changed_partitions
            if not touched:
                continue
            config = self._configs.log_config(image, topic_delta.name)
            for partition_id in sorted(touched):
                registration = topic_delta.partition(partition_id)
                tp = TopicPartition(topic_delta.name, partition_id)
                if registration is None or self._node_id not in registration.replicas:
                    if self._log_manager.delete(tp):
                        log.info("deleted log of partition %s: no replica here any more", tp)
                    continue
                existed = self._log_manager.get(tp) is not None
                self._log_manager.get_or_create(tp, config)
                if not existed:
                    log.info("created log for partition %s (topic id %s)", tp, topic_delta.topic_id)

    def remove_strays(self, image: MetadataImage) -> list[TopicPartition]:
        """Delete logs of partitions the image does not have; returns them."""
        strays = [
            tp
            for tp in self._log_manager.all()
            if tp not in self._internal_logs and not self._hosted(image, tp)
        ]
        for tp in strays:
            self._log_manager.delete(tp)
            log.warning("deleted stray log %s: its partition is not in the cluster metadata", tp)
        return strays

    def _hosted(self, image: MetadataImage, tp: TopicPartition) -> bool:
        registration = image.topics.get_partition(tp)
        return registration is not None and self._node_id in registration.replicas

    def _delete_logs(self, topic: TopicImage) -> None:
        for partition_id in sorted(topic.partitions):
            tp = TopicPartition(topic.name, partition_id)
            if tp not in self._internal_logs and self._log_manager.delete(tp):
                log.info("deleted log of partition %s (topic id %s deleted)", tp, topic.topic_id)

    def _broker_configs_changed(self, delta: MetadataDelta) -> bool:
        names = {"", str(self._node_id)}
        return any(
            resource.type is ConfigResourceType.BROKER and resource.name in names
            for resource in delta.configs_delta.changed_configs
        )

    def _reconfigure(self, image: MetadataImage, topic_names: Iterable[str]) -> None:
        for name in sorted(topic_names):
            topic = image.topic(name)
            if topic is None:
                continue
            config = self._configs.log_config(image, name)
            updated = 0
            for partition_id in topic.partitions:
                partition_log = self._log_manager.get(TopicPartition(name, partition_id))
                if partition_log is not None and partition_log.config != config:
                    partition_log.update_config(config)
                    updated += 1
            if updated:
                log.info("topic %s: new settings applied to %d partition log(s)", name, updated)
