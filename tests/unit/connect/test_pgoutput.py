"""pgoutput's messages (protocol 1) decoded into row changes, from bytes built as PostgreSQL
writes them: a transaction's changes come at its commit, with its end LSN, id and time."""

from __future__ import annotations

import struct

from strom.connect.connectors.cdc.pgoutput import PG_EPOCH_MS, changes


def _tuple(*values: str | None) -> bytes:
    out = struct.pack("!h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        else:
            data = value.encode()
            out += b"t" + struct.pack("!i", len(data)) + data
    return out


RELATION = (
    b"R" + struct.pack("!I", 16384) + b"public\0items\0" + b"d" + struct.pack("!h", 2)
    + b"\x01id\0" + struct.pack("!Ii", 23, -1)
    + b"\x00name\0" + struct.pack("!Ii", 25, -1)
)  # fmt: skip


def test_a_transactions_changes_come_at_its_commit() -> None:
    begin = b"B" + struct.pack("!qqi", 0x100, 2_000_000, 733)
    insert = b"I" + struct.pack("!I", 16384) + b"N" + _tuple("1", "a")
    update = b"U" + struct.pack("!I", 16384) + b"N" + _tuple("1", None)
    replaced = b"U" + struct.pack("!I", 16384) + b"O" + _tuple("1", None) + b"N" + _tuple("2", "b")
    delete = b"D" + struct.pack("!I", 16384) + b"K" + _tuple("2", None)
    commit = b"C" + struct.pack("!bqqq", 0, 0x100, 0x128, 2_000_000)
    messages = [begin, RELATION, insert, update, replaced, delete]
    assert list(changes((n, m) for n, m in enumerate(messages))) == []  # no commit yet
    found = list(changes((n, m) for n, m in enumerate([*messages, commit])))
    assert [(c.op, c.before, c.after) for c in found] == [
        ("c", None, ["1", "a"]),
        ("u", None, ["1", None]),
        ("u", ["1", None], ["2", "b"]),
        ("d", ["2", None], None),
    ]
    first = found[0]
    assert (first.relation.schema, first.relation.name) == ("public", "items")
    assert first.relation.columns == ("id", "name") and first.relation.types == (23, 25)
    assert (first.xid, first.end_lsn, first.ts_ms) == (733, 0x128, PG_EPOCH_MS + 2000)
