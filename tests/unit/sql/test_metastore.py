"""What the metastore keeps of a CREATE, INSERT VALUES as bytes, the server's settings by
ksqlDB's names, and the JSON shapes of ksqlDB's entities: the pure parts of the SQL server."""

from __future__ import annotations

import dataclasses
import io
import json
import struct
from datetime import UTC, datetime

import fastavro
import pytest

from strom.sql import entities
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource, declared_source
from strom.sql.parser import parse_statement
from strom.sql.settings import SqlSettings, SqlSettingsError
from strom.sql.values import decode_record, encode_insert


def create(sql: str) -> DataSource:
    s = parse_statement(sql)
    assert isinstance(s, st.CreateSource)
    return declared_source(s)


def test_a_declared_stream() -> None:
    source = create(
        "CREATE STREAM s (id INT KEY, name STRING) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='json', PARTITIONS=3);"
    )
    assert (source.topic, source.key_format, source.value_format) == ("t", "KAFKA", "JSON")
    assert source.partitions == 3 and source.keys == (Column("ID", ty.INT, key=True),)
    assert source.values == (Column("NAME", ty.STRING),)
    both = create(
        "CREATE TABLE t (k STRING PRIMARY KEY, v INT) WITH (KAFKA_TOPIC='t', FORMAT='JSON');"
    )
    assert (both.key_format, both.value_format, both.kind) == ("JSON", "JSON", st.SourceKind.TABLE)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "CREATE STREAM s (a INT) WITH (VALUE_FORMAT='JSON');",
            'Missing required property "KAFKA_TOPIC" which has no default value.',
        ),
        (
            "CREATE STREAM s (a INT) WITH (KAFKA_TOPIC='t');",
            "Statement is missing the 'VALUE_FORMAT' property",
        ),
        ("CREATE STREAM s (a INT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='XML');", "Unsupported"),
        (
            "CREATE TABLE t (a INT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');",
            "Tables require a PRIMARY KEY.",
        ),
        (
            "CREATE STREAM s (a INT KEY, b INT KEY) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');",
            "The 'KAFKA' format only supports a single field.",
        ),
        (
            "CREATE STREAM s (a INT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=0);",
            "Invalid value for 'PARTITIONS'",
        ),
    ],
)
def test_refused_declarations(sql: str, message: str) -> None:
    with pytest.raises(SqlSemanticError) as info:
        create(sql)
    assert str(info.value).startswith(message)


def test_insert_values_in_the_source_formats() -> None:
    source = create(
        "CREATE STREAM s (id INT KEY, name STRING, amount DOUBLE) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');"
    )
    s = parse_statement("INSERT INTO s (ROWTIME, amount, id) VALUES (1000, 2, -7);")
    assert isinstance(s, st.InsertValues)
    key, value, timestamp = encode_insert(source, s)
    assert key == struct.pack(">i", -7) and timestamp == 1000
    assert value == b'{"NAME":null,"AMOUNT":2.0}'  # compact, as ksqlDB writes it
    delimited = create(
        "CREATE STREAM d (k STRING KEY, a INT, b STRING) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='DELIMITED');"
    )
    every = parse_statement("INSERT INTO d VALUES ('x', 1, NULL);")
    assert isinstance(every, st.InsertValues)
    assert encode_insert(delimited, every) == (b"x", b"1,", None)
    wrong = parse_statement("INSERT INTO d (a) VALUES ('one');")
    assert isinstance(wrong, st.InsertValues)
    with pytest.raises(SqlSemanticError, match="Expected type INTEGER for field A"):
        encode_insert(delimited, wrong)


def test_settings_by_ksqldb_names() -> None:
    settings = SqlSettings.from_properties(
        {
            "bootstrap.servers": "b:9092",
            "ksql.service.id": "orders_",
            "listeners": "http://0.0.0.0:8089",
            "ksql.streams.auto.offset.reset": "Earliest",
            "spark.sql.shuffle.partitions": "1",
            "security.protocol": "SASL_PLAINTEXT",
        }
    )
    assert settings.command_topic == "_confluent-ksql-orders__command_topic"
    assert (settings.listener.port, settings.offset_reset) == (8089, "earliest")
    assert settings.spark_conf == {"spark.sql.shuffle.partitions": "1"}
    assert settings.spark_options()["kafka.security.protocol"] == "SASL_PLAINTEXT"
    with pytest.raises(SqlSettingsError, match="earliest or latest"):
        SqlSettings.from_properties({"ksql.streams.auto.offset.reset": "none"})
    with pytest.raises(SqlSettingsError, match=r"ksql\.sink\.replicas: expected an integer"):
        SqlSettings.from_properties({"ksql.sink.replicas": "many"})
    jks = SqlSettings.from_properties({"ssl.keystore.location": "/ks.jks"})
    with pytest.raises(SqlSettingsError, match="JKS keystore cannot be read outside the JVM"):
        jks.client_config()


def test_listener_security_settings_by_ksqldb_names() -> None:
    https = {"listeners": "https://0.0.0.0:8088", "ssl.keystore.location": "/ks.pem"}
    settings = SqlSettings.from_properties(
        {**https, "authentication.method": "BASIC", "authentication.roles": "admin, dev"},
        environ={"KSQL_OPTS": "-Xmx1g -Djava.security.auth.login.config=/etc/jaas.conf"},
    )
    security = settings.listener_security
    assert security.tls == {"ssl.keystore.location": "/ks.pem"}
    assert (security.jaas_config, security.realm) == ("/etc/jaas.conf", "KsqlServer-Props")
    assert security.roles == {"admin", "dev"}
    assert "ssl.keystore.location" not in settings.client_security  # the listener's own
    over_tls = SqlSettings.from_properties({**https, "security.protocol": "SSL"}, environ={})
    assert over_tls.client_security["ssl.keystore.location"] == "/ks.pem"
    with pytest.raises(ValueError, match=r"BASIC needs java\.security\.auth\.login\.config"):
        SqlSettings.from_properties({"authentication.method": "BASIC"}, environ={})
    with pytest.raises(ValueError, match="expected NONE or BASIC, got DIGEST"):
        SqlSettings.from_properties({"authentication.method": "digest"}, environ={})


def test_entities_have_ksqldb_shapes() -> None:
    source = create(
        "CREATE STREAM s (id INT KEY, tags ARRAY<STRING>) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');"
    )
    listed = entities.sources("SHOW STREAMS;", st.SourceKind.STREAM, [source])
    assert listed["streams"] == [
        {
            "type": "STREAM",
            "name": "S",
            "topic": "t",
            "keyFormat": "KAFKA",
            "valueFormat": "JSON",
            "isWindowed": False,
        }
    ]
    described = entities.source_description(
        "DESCRIBE s;",
        source,
        read_queries=[],
        write_queries=[],
        partitions=1,
        replication=1,
        extended=False,
    )["sourceDescription"]
    assert described["fields"] == [
        {
            "name": "ID",
            "schema": {"type": "INTEGER", "fields": None, "memberSchema": None},
            "type": "KEY",
        },
        {
            "name": "TAGS",
            "schema": {
                "type": "ARRAY",
                "fields": None,
                "memberSchema": {"type": "STRING", "fields": None, "memberSchema": None},
            },
        },
    ]
    error = entities.statement_error(entities.BAD_STATEMENT, "bad", "X;")
    assert error == {
        "@type": "statement_error",
        "error_code": 40001,
        "message": "bad",
        "statementText": "X;",
        "entities": [],
    }


def test_records_read_back_in_python_as_spark_reads_them() -> None:
    source = create(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name STRING, n INT) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');"
    )
    key = struct.pack(">q", -3)
    assert decode_record(source, key, b'{"Name": "x", "N": 2, "other": 1}') == {
        "ID": -3,
        "NAME": "x",
        "N": 2,
    }
    assert decode_record(source, key, b"not json") == {"ID": -3}


def test_avro_records_in_python_by_the_writer_schemas_field_names() -> None:
    declared = create(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name STRING, at TIMESTAMP) "
        "WITH (KAFKA_TOPIC='t', VALUE_FORMAT='AVRO');"
    )
    at = {"type": "long", "logicalType": "timestamp-millis"}
    writer = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "name", "type": ["null", "string"]},
            {"name": "at", "type": ["null", at], "default": None},
        ],
    }
    source = dataclasses.replace(declared, value_schema_id=4, value_schema=json.dumps(writer))
    s = parse_statement("INSERT INTO t (id, name) VALUES (7, 'x');")
    assert isinstance(s, st.InsertValues)
    key, value, _ = encode_insert(source, s)
    assert value is not None and value[:5] == b"\x00\x00\x00\x00\x04"
    assert decode_record(source, key, value) == {"ID": 7, "NAME": "x", "AT": None}
    out = io.BytesIO()
    out.write(b"\x00\x00\x00\x00\x04")
    moment = datetime.fromtimestamp(1700000000.123, UTC)
    fastavro.schemaless_writer(out, fastavro.parse_schema(writer), {"name": "y", "at": moment})
    assert decode_record(source, key, out.getvalue())["AT"] == 1700000000123
    assert decode_record(source, key, b"not avro") == {"ID": 7}
