"""The command topic (ksqlDB's `_confluent-ksql-<service.id>_command_topic`): every statement
that changes the server's state (CREATE, DROP, INSERT INTO, TERMINATE) is written to it before
it runs, and a starting server runs them all again in order, so it rebuilds its streams, tables
and queries; the queries resume from their checkpoints.

Each record: the command id as key (ksqlDB's `stream/`NAME`/create`), and as value
`{"statement", "streamsProperties", "originalProperties"}`. The topic keeps every record
(`cleanup.policy=delete`, no retention limit), as ksqlDB's: the order of commands is the
state, so compaction must not drop any.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.client.topic_log import TopicLog

__all__ = ["Command", "CommandLog"]


@dataclass(frozen=True)
class Command:
    """One command as written: its sequence number is its offset in the topic."""

    seq: int
    command_id: str
    statement: str
    properties: Mapping[str, Any]


class CommandLog:
    """Appends commands and collects those read back, in order, for `take`."""

    def __init__(
        self, *, topic: str, client: dict[str, Any], replicas: int, timeout: float
    ) -> None:
        self._client = client
        self._replicas = replicas
        self._lock = threading.Lock()
        self._pending: list[Command] = []
        self._seq = 0
        self._log = TopicLog(
            topic=topic,
            client=client,
            apply=self._apply,
            lock=self._lock,
            replication_factor=replicas,
            timeout=timeout,
        )

    def start(self) -> None:
        """Create the topic (kept forever), then read it to its end."""
        self._create_topic()
        self._log.start()

    def stop(self) -> None:
        self._log.stop()

    def _create_topic(self) -> None:
        admin = AdminClient(self._client)
        brokers = len(admin.list_topics(timeout=self._log.timeout).brokers)
        factor = min(3, max(1, brokers)) if self._replicas < 1 else self._replicas
        topic = NewTopic(
            self._log.topic,
            num_partitions=1,
            replication_factor=factor,
            config={"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"},
        )
        try:
            admin.create_topics([topic])[self._log.topic].result(timeout=self._log.timeout)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        seq = self._seq
        self._seq += 1
        if key is None or value is None:
            return
        body = json.loads(value)
        self._pending.append(
            Command(seq, key.decode(), body["statement"], body.get("streamsProperties") or {})
        )

    def write(self, command_id: str, statement: str, properties: Mapping[str, Any]) -> None:
        """Append a command; returns once it is read back (then `take` returns it)."""
        value = {
            "statement": statement,
            "streamsProperties": dict(properties),
            "originalProperties": {},
        }
        self._log.write([(command_id.encode(), json.dumps(value).encode())])

    def catch_up(self) -> None:
        self._log.catch_up()

    def take(self) -> list[Command]:
        """The commands read and not taken yet, in order."""
        with self._lock:
            taken, self._pending = self._pending, []
        return taken
