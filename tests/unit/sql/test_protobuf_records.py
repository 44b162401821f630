"""One PROTOBUF record in Python (INSERT VALUES, pull queries): the framed message of inserted
columns read back, and a message with nested, repeated, map and well-known fields read as the
JSON formats hold them; what is not a message of the schema reads as no columns."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pool, message_factory

from strom.registry.protobuf_schema import file_set
from strom.registry.wire import frame
from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.protobuf_records import decode_protobuf, encode_protobuf
from strom.sql.protobuf_schemas import protobuf_schema

COLUMNS = (
    Column("NAME", ty.STRING),
    Column("N", ty.BIGINT),
    Column("T", ty.TIMESTAMP),
    Column("TAGS", ty.ArrayType(ty.STRING)),
    Column("M", ty.MapType(ty.STRING, ty.INT)),
    Column("S", ty.StructType((ty.StructField("X", ty.DOUBLE),))),
)


def _message_class(schema: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    for file in file_set(schema).file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ConnectDefault1"))


def test_inserted_columns_read_back() -> None:
    schema = protobuf_schema(COLUMNS)
    data = encode_protobuf(COLUMNS, {"NAME": "a", "N": 2**40, "T": None}, schema, 9)
    assert data[:6] == b"\x00\x00\x00\x00\x09\x00"
    assert decode_protobuf(COLUMNS[:3], data, schema) == {"NAME": "a", "N": 2**40, "T": None}


def test_a_message_reads_as_the_json_formats_hold_it() -> None:
    schema = protobuf_schema(COLUMNS)
    message = _message_class(schema)(NAME="b", TAGS=["x", "y"], M={"k": 1}, S={"X": 0.5})
    message.T.FromMilliseconds(1700000000123)
    data = frame(9, b"\x00" + message.SerializeToString())
    assert decode_protobuf(COLUMNS, data, schema) == {
        "NAME": "b",
        "N": 0,
        "T": 1700000000123,
        "TAGS": ["x", "y"],
        "M": {"k": 1},
        "S": {"X": 0.5},
    }
    assert decode_protobuf(COLUMNS, b"plain", schema) == {}
    assert decode_protobuf(COLUMNS, frame(9, b"\x02\x02"), schema) == {}  # another message
