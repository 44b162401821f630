"""Electing the primary through Kafka's consumer-group protocol, as Confluent's registry does
with a group of its own: every instance joins one group subscribed to the single-partition
``_schemas`` topic, and the member the group assigns that partition to is the primary. A
member's ``client.id`` is its URL, so the others find the primary to forward writes to by
describing the group. When the primary stops or stalls the group rebalances and another
instance takes the partition."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from strom.registry.errors import RegistryError

__all__ = ["GroupElection"]

log = logging.getLogger(__name__)


class GroupElection:
    """This instance's membership of the registry group, and the primary it knows of."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str,
        group_id: str,
        url: str,
        client_config: dict[str, Any] | None = None,
        session_timeout_ms: int = 6000,
        lookup_interval: float = 0.5,
        election_wait: float = 15.0,
    ) -> None:
        self.url = url
        self.topic = topic
        self.group_id = group_id
        self._clients = {"bootstrap.servers": bootstrap_servers, **(client_config or {})}
        self._session_timeout_ms = session_timeout_ms
        self._lookup_interval = lookup_interval
        self._election_wait = election_wait
        self._is_primary = threading.Event()
        self._stopping = threading.Event()
        self._known: tuple[float, str | None] = (0.0, None)
        self._admin: AdminClient | None = AdminClient(self._clients)
        self._thread = threading.Thread(target=self._member, name="registry-election", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)
        self._admin = None  # librdkafka's handle goes with the last reference

    @property
    def is_primary(self) -> bool:
        return self._is_primary.is_set()

    def primary_url(self) -> str | None:
        """None when this instance is primary, else the primary's URL; while the group has
        none (a rebalance), wait up to ``election_wait``, then fail with 50003."""
        deadline = time.monotonic() + self._election_wait
        while True:
            try:
                return self._primary_now()
            except RegistryError:
                if time.monotonic() > deadline or self._stopping.is_set():
                    raise
                time.sleep(0.1)

    def _member(self) -> None:
        consumer = Consumer(
            {
                **self._clients,
                "group.id": self.group_id,
                "client.id": self.url,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
                "session.timeout.ms": self._session_timeout_ms,
                "heartbeat.interval.ms": max(100, self._session_timeout_ms // 6),
                "partition.assignment.strategy": "range",
            }
        )

        def assigned(_: Consumer, partitions: list[KafkaTopicPartition]) -> None:
            if any(p.topic == self.topic and p.partition == 0 for p in partitions):
                log.info("this instance (%s) is now the primary", self.url)
                self._is_primary.set()

        def revoked(_: Consumer, partitions: list[KafkaTopicPartition]) -> None:
            if self._is_primary.is_set():
                log.info("this instance (%s) is no longer the primary", self.url)
            self._is_primary.clear()

        consumer.subscribe([self.topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        try:
            while not self._stopping.is_set():
                consumer.poll(0.2)  # the records themselves are the store's business
        finally:
            self._is_primary.clear()
            consumer.close()

    def _primary_now(self) -> str | None:
        if self._is_primary.is_set():
            return None
        checked, known = self._known
        if known is None or time.monotonic() - checked > self._lookup_interval:
            known = self._describe()
            self._known = (time.monotonic(), known)
        if known is None or known == self.url:
            raise RegistryError.forwarding("No primary schema registry instance is known")
        return known

    def _describe(self) -> str | None:
        if self._admin is None:
            return None
        try:
            futures = self._admin.describe_consumer_groups([self.group_id], request_timeout=5)
            description = futures[self.group_id].result(timeout=10)
        except Exception as error:  # any failure means "no primary known"
            log.warning("describing the registry group: %s", error)
            return None
        for member in description.members:
            assignment = member.assignment.topic_partitions if member.assignment else []
            if any(p.topic == self.topic and p.partition == 0 for p in assignment):
                return str(member.client_id)
        return None
