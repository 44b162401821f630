"""A table's materialized state, what pull queries read (ksqlDB's state store): the latest row of
each key of the table's topic, kept by a consumer thread that follows the topic from its start
(committed records only; a tombstone removes its key). A pull query is then a lookup in memory,
not a read of the topic nor a Spark job.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource
from strom.sql.values import decode_record

__all__ = ["TableState"]

log = logging.getLogger(__name__)
Row = dict[str, object]


class TableState:
    """The rows of one table (a single key column), by key value. `start` starts following
    the topic; `rows` answers once the topic was read to its end once (restored)."""

    def __init__(self, source: DataSource, client: Mapping[str, Any], timeout: float) -> None:
        (key,) = source.keys
        self.source = source
        self._key = key.name
        self._client = dict(client)
        self._timeout = timeout
        self._rows: dict[object, Row] = {}
        self._lock = threading.Lock()
        self._restored = threading.Event()
        self._stopping = threading.Event()
        self._error: str | None = None
        self._thread = threading.Thread(
            target=self._follow, name=f"sql-table-{source.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(self._timeout)

    def rows(self, keys: Iterable[object] | None) -> list[Row]:
        """The rows of `keys` (those present), or every row (None)."""
        if not self._restored.wait(self._timeout):
            raise SqlSemanticError(f"{self.source.name} is still being restored; try again.")
        if self._error is not None:
            raise SqlSemanticError(self._error)
        with self._lock:
            if keys is None:
                return list(self._rows.values())
            return [row for k in keys if (row := self._rows.get(k)) is not None]

    def _follow(self) -> None:
        consumer = Consumer(
            {
                **self._client,
                "group.id": f"strom-sql-table-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                # the table is every row still in the log: a start below the log start
                # (retention moved it) resumes at the oldest row, never at the newest
                "auto.offset.reset": "earliest",
            }
        )
        topic = self.source.topic
        try:
            metadata = consumer.list_topics(timeout=self._timeout).topics.get(topic)
            if metadata is None or metadata.error is not None:
                raise SqlSemanticError(f"The topic of {self.source.name}, {topic}, is gone.")
            partitions = list(metadata.partitions)
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
            ended: set[int] = set()
            while not self._stopping.is_set():
                messages = consumer.consume(10_000, timeout=0.2)
                self._apply(messages, ended)
                if len(ended) == len(partitions):
                    self._restored.set()
        except Exception as error:  # pull queries say why
            log.exception("materializing %s failed", self.source.name)
            self._error = str(error)
            self._restored.set()
        finally:
            consumer.close()

    def _apply(self, messages: list[Message], ended: set[int]) -> None:
        changes: list[tuple[object, Row | None]] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition() or 0)
                else:
                    log.warning("reading %s: %s", self.source.topic, error)
                continue
            columns = decode_record(self.source, message.key(), message.value())
            latest = columns if message.value() is not None else None
            changes.append((columns.get(self._key), latest))
        if not changes:
            return
        with self._lock:
            for key, row in changes:
                if row is None:
                    self._rows.pop(key, None)
                else:
                    self._rows[key] = row
