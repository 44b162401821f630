"""Pull queries (`SELECT ... FROM table [WHERE key = ...]`, no EMIT CHANGES): the table's current
rows, read from its topic (committed records only, the latest per key, tombstones removing
keys) by a plain consumer, without a Spark job, then filtered by key and projected.

Not yet ksqlDB's materialized state: each query reads the topic from its start, so its time
grows with the topic. What a pull query may say is ksqlDB's subset: columns (or `*`), and a
WHERE on the key: `=` or `IN` with literals.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from strom.sql import entities
from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql.analyzer import OutputColumn, analyze
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource
from strom.sql.values import decode_record

__all__ = ["PullQuery"]


def _literal(e: ex.Expression) -> object:
    match e:
        case ex.StringLiteral(v) | ex.IntegerLiteral(v) | ex.BooleanLiteral(v):
            return v
        case ex.DoubleLiteral(v):
            return v
    raise SqlSemanticError("A pull query's WHERE compares the key with literals only.")


def _wanted_keys(where: ex.Expression | None, key: str) -> list[object] | None:
    """The key values the WHERE asks for; None for every row (a table scan)."""
    match where:
        case None:
            return None
        case ex.Comparison("=", ex.ColumnRef(name), value) if name == key:
            return [_literal(value)]
        case ex.Comparison("=", value, ex.ColumnRef(name)) if name == key:
            return [_literal(value)]
        case ex.InList(ex.ColumnRef(name), items, False) if name == key:
            return [_literal(i) for i in items]
    raise SqlSemanticError(
        f"Unsupported pull query WHERE: only {key} = literal or {key} IN (literals) are "
        "supported yet."
    )


class PullQuery:
    """One pull query; `rows` reads the table and yields the matching rows."""

    final_message = None

    def __init__(
        self, source: DataSource, query: st.Query, client: Mapping[str, Any], timeout: float
    ) -> None:
        if source.kind is not st.SourceKind.TABLE:
            raise SqlSemanticError(
                f"Pull queries read tables; {source.name} is a stream: add EMIT CHANGES for a "
                "push query."
            )
        if source.windowed or query.window or query.group_by or query.partition_by:
            raise SqlSemanticError("Windows and grouping are not supported in pull queries yet.")
        if len(source.keys) != 1:
            raise SqlSemanticError(f"{source.name} has no single key column to look up.")
        resolved = analyze(query, {source.name: source.schema})
        self.names: list[str] = []
        for item in query.select:
            if isinstance(item, st.AllColumns):
                self.names += [c.name for c in source.columns]
            elif isinstance(item, st.SingleColumn) and isinstance(item.expression, ex.ColumnRef):
                self.names.append(item.expression.name)
            else:
                raise SqlSemanticError("A pull query selects columns only (or *), yet.")
        keys = {c.name for c in source.keys}
        self.columns: tuple[OutputColumn, ...] = tuple(
            OutputColumn(c.name, c.type, name in keys)
            for c, name in zip(resolved.columns, self.names, strict=True)
        )
        self.id = f"query_{uuid.uuid4().int % 10**13}"
        self.limit = query.limit
        self._wanted = _wanted_keys(query.where, source.keys[0].name)
        self._key = source.keys[0].name
        self._source = source
        self._client = dict(client)
        self._timeout = timeout

    def header(self) -> Mapping[str, Any]:
        return entities.stream_header(self.id, self.columns)

    def schema(self) -> str:
        return entities.query_schema(self.columns)

    def _table(self) -> dict[bytes | None, dict[str, object]]:
        """The topic's latest committed row per key."""
        consumer = Consumer(
            {
                **self._client,
                "group.id": f"pull-{self.id}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
            }
        )
        try:
            topic = self._source.topic
            metadata = consumer.list_topics(timeout=self._timeout).topics.get(topic)
            if metadata is None:
                raise SqlSemanticError(f"The topic of {self._source.name}, {topic}, is gone.")
            partitions = list(metadata.partitions)
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
            rows: dict[bytes | None, dict[str, object]] = {}
            ended: set[int] = set()
            deadline = time.monotonic() + self._timeout
            while len(ended) < len(partitions):
                if time.monotonic() > deadline:
                    raise SqlSemanticError(f"Timed out reading {topic} for a pull query.")
                for message in consumer.consume(10_000, timeout=0.2):
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            ended.add(message.partition() or 0)
                        continue
                    if message.value() is None:
                        rows.pop(message.key(), None)
                    else:
                        rows[message.key()] = decode_record(
                            self._source, message.key(), message.value()
                        )
            return rows
        finally:
            consumer.close()

    def rows(self) -> Iterator[list[Any] | None]:
        sent = 0
        for row in self._table().values():
            if self._wanted is not None and row.get(self._key) not in self._wanted:
                continue
            if self.limit is not None and sent >= self.limit:
                return
            sent += 1
            yield [row.get(name) for name in self.names]

    def close(self) -> None:
        """Nothing runs after the rows: there is nothing to stop."""
