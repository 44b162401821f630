"""SQL columns <-> Protobuf (the PROTOBUF format): the `.proto` ksqlDB registers for a sink
(ConnectDefault1, nested ConnectDefaultN), read back to the same columns through protoc; a
producer's schema read as Connect's converter reads it (Confluent's built-in imports without
references: Decimal, Date, TimeOfDay); the types it cannot write refused."""

from __future__ import annotations

import pytest

from strom.registry.protobuf_schema import ProtobufSchema
from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.protobuf_schemas import protobuf_columns, protobuf_schema

WRITTEN = (
    Column("B", ty.BOOLEAN),
    Column("I", ty.INT),
    Column("L", ty.BIGINT),
    Column("D", ty.DOUBLE),
    Column("S", ty.STRING),
    Column("BY", ty.BYTES),
    Column("TS", ty.TIMESTAMP),
    Column("DT", ty.DATE),
    Column("TM", ty.TIME),
    Column("DC", ty.DecimalType(10, 3)),
    Column("DCS", ty.ArrayType(ty.DecimalType(4, 0))),
    Column("A", ty.ArrayType(ty.STRING)),
    Column("M", ty.MapType(ty.STRING, ty.BIGINT)),
    Column(
        "ST",
        ty.StructType(
            (
                ty.StructField("X", ty.INT),
                ty.StructField("IN", ty.StructType((ty.StructField("Y", ty.DOUBLE),))),
            )
        ),
    ),
    Column("AS", ty.ArrayType(ty.StructType((ty.StructField("Z", ty.STRING),)))),
)


def _columns(text: str) -> tuple[Column, ...]:
    return protobuf_columns(ProtobufSchema(text).file)


def test_the_schema_is_ksqldbs() -> None:
    columns = (
        Column("A", ty.INT),
        Column("B", ty.DOUBLE),
        Column("C", ty.ArrayType(ty.STRING)),
    )
    assert protobuf_schema(columns) == (
        'syntax = "proto3";\n\nmessage ConnectDefault1 {\n  int32 A = 1;\n  double B = 2;\n'
        "  repeated string C = 3;\n}\n"
    )


def test_every_written_type_reads_back() -> None:
    text = protobuf_schema(WRITTEN)
    assert 'import "google/protobuf/timestamp.proto";' in text
    assert 'import "confluent/type/decimal.proto";' in text
    # Confluent's ProtobufData: the Decimal's precision and scale as field_meta params
    assert (
        '  confluent.type.Decimal DC = 10 [(confluent.field_meta) = { params: [{ key: "precision",'
        ' value: "10" }, { key: "scale", value: "3" }] }];'
    ) in text
    assert "    message ConnectDefault3 {" in text  # nested inside ConnectDefault2
    assert _columns(text) == WRITTEN


def test_a_producers_schema_as_connect_reads_it() -> None:
    text = """
        syntax = "proto3";
        package shop.v1;
        import "google/protobuf/wrappers.proto";
        enum Kind { A = 0; B = 1; }
        message Order {
          uint32 qty = 1;
          float price = 2;
          Kind kind = 3;
          google.protobuf.StringValue note = 4;
          sint64 big = 5;
          map<int32, Line> lines = 6;
          message Line { string sku = 1; }
        }
        message Later { string x = 1; }
    """
    assert _columns(text) == (
        Column("QTY", ty.BIGINT),
        Column("PRICE", ty.DOUBLE),
        Column("KIND", ty.STRING),
        Column("NOTE", ty.STRING),
        Column("BIG", ty.BIGINT),
        Column("LINES", ty.MapType(ty.INT, ty.StructType((ty.StructField("sku", ty.STRING),)))),
    )


def test_a_decimal_without_params_is_the_widest() -> None:
    text = """
        syntax = "proto3";
        import "confluent/type/decimal.proto";
        import "google/type/timeofday.proto";
        message Price { confluent.type.Decimal amount = 1; google.type.TimeOfDay at = 2; }
    """
    assert _columns(text) == (
        Column("AMOUNT", ty.DecimalType(38, 0)),
        Column("AT", ty.TIME),
    )


def test_a_recursive_message_is_refused() -> None:
    with pytest.raises(SqlSemanticError, match="message Node is recursive"):
        _columns('syntax = "proto3"; message Node { Node next = 1; }')


@pytest.mark.parametrize(
    ("t", "error"),
    [
        (ty.ArrayType(ty.ArrayType(ty.INT)), "a repeated field cannot hold arrays or maps"),
        (ty.MapType(ty.DOUBLE, ty.INT), "map keys are STRING, INTEGER, BIGINT or BOOLEAN"),
    ],
)
def test_types_it_cannot_write_are_refused(t: ty.SqlType, error: str) -> None:
    with pytest.raises(SqlSemanticError, match=error.replace("(", r"\(").replace(")", r"\)")):
        protobuf_schema([Column("X", t)])


def test_a_full_name_names_the_message_and_picks_it_when_reading() -> None:
    text = protobuf_schema(
        [Column("ID", ty.STRING), Column("AT", ty.StructType((ty.StructField("X", ty.INT),)))],
        "com.acme.Order",
    )
    assert "package com.acme;" in text
    assert "message Order {" in text
    assert "  message ConnectDefault1 {" in text  # nested: ProtobufData's default names
    file = ProtobufSchema(text).file
    assert _columns(text) == protobuf_columns(file, "com.acme.Order")
    several = ProtobufSchema(
        'syntax = "proto3"; package p; message A { string a = 1; }'
        " message B { int32 b = 1; message C { bool c = 1; } }"
    ).file
    assert protobuf_columns(several, "p.B") == (Column("B", ty.INT),)
    assert protobuf_columns(several, "p.B.C") == (Column("C", ty.BOOLEAN),)
    with pytest.raises(SqlSemanticError, match=r"has no message 'p\.D'"):
        protobuf_columns(several, "p.D")
