"""Which server of a service runs each persistent query: the servers of one `ksql.service.id`
share its command topic, so each has every query, and a query runs on one of them at a time.

ksqlDB splits each query's work across its servers (Kafka Streams' tasks); a Spark streaming
query is one driver with one checkpoint, so here the unit is the whole query. Ownership is a
consumer group's assignment, as Kafka Streams' tasks are: every server is a member of the group
`_confluent-ksql-<service.id>_query_owners`, subscribed to the topic of that name (its
partitions hold no records: they are leases), and a query belongs to lease
`crc32(query id) % partitions`. The member assigned that lease runs the query. Assignment is
eager: a member's leases are taken from it (`on_revoke`, where the engine stops their queries)
before anyone is given them, so two servers never run one query. A server killed -9 leaves the
group after `ksql.streams.session.timeout.ms`; the rebalance gives its leases to the others,
which start the queries from their checkpoints (the state dir is shared: see NOTES.md).
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

__all__ = ["LEASES", "QueryOwners", "lease_of"]

log = logging.getLogger(__name__)

LEASES = 12
"""The leases topic's partitions: how finely the queries spread over the servers."""


def lease_of(query_id: str, leases: int = LEASES) -> int:
    """The lease a query belongs to (the same on every server)."""
    return zlib.crc32(query_id.encode()) % leases


class QueryOwners:
    """This server's leases; `changed` is called (in the group's thread) after each change."""

    def __init__(
        self,
        *,
        topic: str,
        client: dict[str, Any],
        replicas: int,
        session_timeout_ms: int,
        timeout: float,
        changed: Callable[[], None],
    ) -> None:
        self.topic = topic
        self._client = client
        self._replicas = replicas
        self._session_timeout_ms = session_timeout_ms
        self._timeout = timeout
        self._changed = changed
        self._owned: frozenset[int] = frozenset()
        self._leases = LEASES
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def owns(self, query_id: str) -> bool:
        return lease_of(query_id, self._leases) in self._owned

    def start(self) -> None:
        """Create the leases topic if missing and join the group (in a thread of its own)."""
        admin = AdminClient(self._client)
        metadata = admin.list_topics(timeout=self._timeout)
        existing = metadata.topics.get(self.topic)
        if existing is None or existing.error is not None:
            brokers = max(1, len(metadata.brokers))
            factor = min(3, brokers) if self._replicas < 1 else self._replicas
            try:
                admin.create_topics([NewTopic(self.topic, LEASES, factor)])[self.topic].result(
                    timeout=self._timeout
                )
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        else:
            self._leases = len(existing.partitions)
        consumer = Consumer(
            {
                **self._client,
                "group.id": self.topic,
                "enable.auto.commit": False,
                "session.timeout.ms": self._session_timeout_ms,
                "heartbeat.interval.ms": max(100, self._session_timeout_ms // 3),
                "partition.assignment.strategy": "roundrobin",  # eager: revoke, then assign
            }
        )
        consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked)
        self._thread = threading.Thread(
            target=self._run, args=(consumer,), name="sql-query-owners", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Leave the group (the queries' leases go to the other servers)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self._timeout)

    def _run(self, consumer: Consumer) -> None:
        try:
            while not self._stopping.is_set():
                consumer.poll(0.2)  # the callbacks run in here
        finally:
            consumer.close()

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._owned = frozenset(p.partition for p in partitions)
        log.info("this server owns leases %s of %s", sorted(self._owned), self.topic)
        self._changed()

    def _revoked(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self._owned = frozenset()
        self._changed()
