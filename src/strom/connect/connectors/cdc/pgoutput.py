"""PostgreSQL's logical replication messages (``pgoutput``, protocol version 1), decoded without
I/O: the changes of the transactions a slot gives, each with its table, operation, row images
(column values as PostgreSQL's text, None for NULL) and its transaction's commit LSN, end LSN,
id and commit time. Relations are described in the same stream before their first change."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["Change", "Relation", "changes"]

PG_EPOCH_MS = 946_684_800_000
"""2000-01-01 (PostgreSQL's epoch) in Unix milliseconds."""


@dataclass(frozen=True)
class Relation:
    schema: str
    name: str
    columns: tuple[str, ...]
    types: tuple[int, ...]


@dataclass(frozen=True)
class Change:
    """One row change: ``op`` is Debezium's (c, u, d)."""

    relation: Relation
    op: str
    before: list[str | None] | None
    after: list[str | None] | None
    xid: int
    end_lsn: int
    ts_ms: int


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        end = self.data.index(b"\0", self.at)
        text = self.data[self.at : end].decode()
        self.at = end + 1
        return text

    def byte(self) -> str:
        value = chr(self.data[self.at])
        self.at += 1
        return value

    def tuple(self) -> list[str | None]:
        values: list[str | None] = []
        for _ in range(self.take("!h")):
            kind = self.byte()
            if kind == "t":
                size = self.take("!i")
                values.append(self.data[self.at : self.at + size].decode())
                self.at += size
            else:  # n: null; u: an unchanged TOASTed value pgoutput does not send
                values.append(None)
        return values


def changes(messages: Iterable[tuple[int, bytes]]) -> Iterator[Change]:
    """The row changes of complete transactions in ``(lsn, data)`` messages, in order; a
    transaction's changes come once its commit is read (``end_lsn`` is then known)."""
    relations: dict[int, Relation] = {}
    pending: list[tuple[Relation, str, list[str | None] | None, list[str | None] | None]] = []
    xid = ts_ms = 0
    for _, data in messages:
        message = _Reader(bytes(data))
        kind = message.byte()
        if kind == "B":
            message.take("!q")
            ts_ms = message.take("!q") // 1000 + PG_EPOCH_MS
            xid = message.take("!i")
            pending = []
        elif kind == "C":
            message.take("!b")
            message.take("!q")
            end = message.take("!q")
            for relation, op, before, after in pending:
                yield Change(relation, op, before, after, xid, end, ts_ms)
            pending = []
        elif kind == "R":
            relid = message.take("!I")
            schema, name = message.string(), message.string()
            message.take("!b")
            names: list[str] = []
            types: list[int] = []
            for _ in range(message.take("!h")):
                message.take("!b")
                names.append(message.string())
                types.append(message.take("!I"))
                message.take("!i")
            relations[relid] = Relation(schema, name, tuple(names), tuple(types))
        elif kind in "IUD":
            relation = relations[message.take("!I")]
            before = after = None
            marker = message.byte()
            if marker in "KO":
                before = message.tuple()
                marker = message.byte() if kind == "U" else ""
            if marker == "N":
                after = message.tuple()
            pending.append((relation, {"I": "c", "U": "u", "D": "d"}[kind], before, after))
