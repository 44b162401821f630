"""`PRINT topic [FROM BEGINNING] [INTERVAL n] [LIMIT n]`: a topic's records as ksqlDB prints
them, a line each (`rowtime: ..., key: ..., value: ..., partition: n`), after two lines naming
the formats the first record looks like (`Key format:`, `Value format:`). `line` and `formats`
are pure; `TopicPrint` reads the topic with a consumer of its own (from its end, or from its
start with FROM BEGINNING) until its LIMIT or the client closes the query.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

from strom.sql import statements as st

__all__ = ["TopicPrint", "formats", "line", "topic_named"]


def topic_named(name: str, topics: set[str]) -> str | None:
    """The topic `PRINT name` means: that one, else the one topic of that name in any case
    (an unquoted name is upper-cased; topics are mostly lower-case)."""
    if name in topics:
        return name
    matches = [t for t in topics if t.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _format(data: bytes | None) -> str:
    if data is None:
        return "¯\\_(ツ)_/¯ - no data processed"
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return {4: "KAFKA_INT", 8: "KAFKA_BIGINT"}.get(len(data), "unknown")
    try:
        return "JSON" if isinstance(json.loads(text), dict | list) else "KAFKA_STRING"
    except ValueError:
        return "KAFKA_STRING"


def formats(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """The formats a record's key and value look like, as ksqlDB's PRINT guesses them."""
    return _format(key), _format(value)


def _show(data: bytes | None) -> str:
    if data is None:
        return "<null>"
    try:
        return data.decode()
    except UnicodeDecodeError:
        if len(data) in (4, 8):
            return str(int.from_bytes(data, "big", signed=True))
        return "0x" + data.hex().upper()


def line(timestamp_ms: int, key: bytes | None, value: bytes | None, partition: int) -> str:
    """One record as ksqlDB's PRINT shows it."""
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    rowtime = moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} Z"
    return f"rowtime: {rowtime}, key: {_show(key)}, value: {_show(value)}, partition: {partition}"


class TopicPrint:
    """One PRINT; `rows` yields its lines (None while there is nothing new)."""

    final_message = None

    def __init__(
        self, s: st.PrintTopic, topic: str, partitions: int, client: Mapping[str, Any]
    ) -> None:
        self.id = f"query_{uuid.uuid4().int % 10**13}"
        self._statement = s
        self._closed = False
        self._lock = threading.Lock()  # `close` may come from another thread than `rows`
        self._consumer = Consumer(
            {**client, "group.id": f"strom-sql-print-{uuid.uuid4()}", "enable.auto.commit": False}
        )
        start = OFFSET_BEGINNING if s.from_beginning else OFFSET_END
        self._consumer.assign([TopicPartition(topic, p, start) for p in range(partitions)])

    def rows(self, poll: float = 0.5) -> Iterator[str | None]:
        every, limit = self._statement.interval or 1, self._statement.limit
        seen = printed = 0
        while limit is None or printed < limit:
            with self._lock:
                if self._closed:
                    return
                message = self._consumer.poll(poll)
            if message is None or message.error() is not None:
                yield None
                continue
            seen += 1
            if (seen - 1) % every:
                continue
            key, value = message.key(), message.value()
            if printed == 0:
                key_format, value_format = formats(key, value)
                yield f"Key format: {key_format}"
                yield f"Value format: {value_format}"
            printed += 1
            yield line(message.timestamp()[1], key, value, message.partition() or 0)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._consumer.close()
