"""A table's materialized state, what pull queries read (ksqlDB's state store): the latest row of
each key of the table's topic, kept by a consumer thread that follows the topic from its start
(committed records only; a tombstone removes its key). A pull query is then a lookup in memory,
not a read of the topic nor a Spark job.

A windowed table's rows are by key and window: its record keys end with the window's start (8
big-endian bytes; a session's with its end, then its start), as the planner's sink writes them,
and each row gets WINDOWSTART and WINDOWEND (a time window's end is its start plus its size).
"""

from __future__ import annotations

import logging
import struct
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from strom.sql import statements as st
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource
from strom.sql.planner import millis
from strom.sql.values import decode_record

__all__ = ["TableState"]

log = logging.getLogger(__name__)
Row = dict[str, object]
Key = tuple[object, ...]
"""A row's key columns' values, in the table's order."""
BOUNDS = ("WINDOWSTART", "WINDOWEND")


class TableState:
    """The rows of one table, by key (and window: `window` is the windowed table's WINDOW).
    `start` starts following the topic; `rows` answers once the topic was read to its end once
    (restored)."""

    def __init__(
        self,
        source: DataSource,
        client: Mapping[str, Any],
        timeout: float,
        window: st.WindowExpression | None = None,
    ) -> None:
        self.source = source
        self._keys = tuple(k.name for k in source.keys)
        session = window is not None and window.kind is st.WindowKind.SESSION
        self._suffix = 0 if window is None else 16 if session else 8
        self._size = millis(window.size) if window is not None and not session else 0
        self._client = dict(client)
        self._timeout = timeout
        self._rows: dict[Key, dict[Key, Row]] = {}
        """Rows by key, then by window (start, end; () when not windowed)."""
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

    def rows(self, keys: Iterable[Key] | None) -> list[Row]:
        """The rows of `keys` (those present; every window of each, by start), or every row
        (None)."""
        if not self._restored.wait(self._timeout):
            raise SqlSemanticError(f"{self.source.name} is still being restored; try again.")
        if self._error is not None:
            raise SqlSemanticError(self._error)
        with self._lock:
            found = self._rows.values() if keys is None else [self._rows.get(k, {}) for k in keys]
            return [windows[w] for windows in found for w in sorted(windows)]

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
        changes: list[tuple[Key, Key, Row | None]] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition() or 0)
                else:
                    log.warning("reading %s: %s", self.source.topic, error)
                continue
            head, window = self._split(message.key())
            columns = decode_record(self.source, head, message.value())
            columns.update(zip(BOUNDS, window, strict=False))
            latest = columns if message.value() is not None else None
            changes.append((tuple(columns.get(k) for k in self._keys), window, latest))
        if not changes:
            return
        with self._lock:
            for key, window, row in changes:
                if row is not None:
                    self._rows.setdefault(key, {})[window] = row
                elif (windows := self._rows.get(key)) is not None:
                    windows.pop(window, None)
                    if not windows:
                        del self._rows[key]

    def _split(self, key: bytes | None) -> tuple[bytes | None, Key]:
        """A record key's key columns' bytes and its window (start, end), as the sink wrote it."""
        if not self._suffix or key is None or len(key) < self._suffix:
            return key, ()
        head, tail = key[: -self._suffix], key[-self._suffix :]
        if self._suffix == 16:  # a session: its end, then its start
            end, start = struct.unpack(">qq", tail)
            return head, (start, end)
        (start,) = struct.unpack(">q", tail)
        return head, (start, start + self._size)
