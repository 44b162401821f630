"""The data source's options: Spark's names, defaults, client setting translation, refusals."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from strom.common import TopicPartition
from strom.spark.offsets import SpecKind
from strom.spark.options import (
    OptionError,
    SubscriptionKind,
    parse_duration_ms,
    parse_read_options,
    parse_write_options,
)
from strom.spark.writer import check_write_schema

BOOT = {"kafka.bootstrap.servers": "h:9092"}


def test_defaults_for_streaming_and_batch() -> None:
    stream = parse_read_options({**BOOT, "subscribe": "a, b"}, streaming=True)
    assert stream.subscription.topics == ("a", "b")
    assert stream.starting.kind is SpecKind.LATEST
    assert stream.fail_on_data_loss and not stream.include_headers
    assert stream.client["bootstrap.servers"] == "h:9092"
    batch = parse_read_options({**BOOT, "SubscribePattern": "a.*"}, streaming=False)
    assert batch.subscription.kind is SubscriptionKind.SUBSCRIBE_PATTERN
    assert batch.subscription.matches("abc") and not batch.subscription.matches("xa")
    assert batch.starting.kind is SpecKind.EARLIEST
    assert batch.ending.kind is SpecKind.LATEST


def test_by_timestamp_options_win() -> None:
    options = {
        **BOOT,
        "assign": '{"t":[0]}',
        "startingOffsets": "earliest",
        "startingTimestamp": "5",
    }
    spec = parse_read_options(options, streaming=True).starting
    assert (spec.kind, spec.timestamp) == (SpecKind.TIMESTAMP, 5)
    options["startingOffsetsByTimestamp"] = '{"t":{"0":9}}'
    spec = parse_read_options(options, streaming=True).starting
    assert spec.kind is SpecKind.TIMESTAMPS
    assert spec.offsets == {TopicPartition("t", 0): 9}


def test_client_settings_are_translated() -> None:
    options = parse_read_options(
        {
            **BOOT,
            "subscribe": "t",
            "kafka.fetch.max.wait.ms": "50",
            "kafka.request.timeout.ms": "999",
            "kafka.max.poll.records": "123",
            "kafka.sasl.jaas.config": 'PlainLoginModule required username="u" password="p";',
            "kafka.isolation.level": "read_committed",
        },
        streaming=True,
    )
    assert options.client == {
        "bootstrap.servers": "h:9092",
        "fetch.wait.max.ms": "50",
        "socket.timeout.ms": "999",
        "sasl.username": "u",
        "sasl.password": "p",
        "isolation.level": "read_committed",
    }
    assert options.fetch_records == 123
    write = parse_write_options({**BOOT, "kafka.buffer.memory": "2097152", "topic": "t"})
    assert write.client["queue.buffering.max.kbytes"] == "2048"
    assert write.client["enable.idempotence"] == "true"
    assert write.topic == "t"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t", "endingOffsets": "latest"}, "not valid in streaming queries"),
        ({"subscribe": "t", "kafka.group.id": "g", "kafka.key.deserializer": "x"}, "keys are"),
        ({"subscribe": "t", "kafka.ssl.truststore.location": "x"}, "ssl.ca.location"),
        ({"subscribe": "t", "maxTriggerDelay": "soon"}, "must be a duration"),
        ({"subscribe": "t", "failOnDataLoss": "yes"}, "'true' or 'false'"),
        ({"subscribe": " , "}, "No topics to subscribe to"),
        ({"subscribePattern": "("}, "not a valid pattern"),
        ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "x"}, "'error' or 'latest'"),
    ],
)
def test_bad_stream_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_read_options({**BOOT, **options}, streaming=True)


def test_durations() -> None:
    assert parse_duration_ms("d", "15m") == 900_000
    assert parse_duration_ms("d", "30 s") == 30_000
    assert parse_duration_ms("d", "250") == 250
    assert parse_duration_ms("d", "2h") == 7_200_000


def test_group_id_prefix_names_the_consumers_unless_a_group_id_is_given() -> None:
    options = parse_read_options({**BOOT, "subscribe": "t", "groupIdPrefix": "etl"}, streaming=True)
    assert options.client["group.id"].startswith("etl-")
    given = {**BOOT, "subscribe": "t", "groupIdPrefix": "etl", "kafka.group.id": "g"}
    assert parse_read_options(given, streaming=True).client["group.id"] == "g"
    assert "group.id" not in parse_read_options({**BOOT, "subscribe": "t"}, streaming=True).client


def test_the_producer_is_idempotent_unless_acks_conflict() -> None:
    assert parse_write_options({**BOOT, "kafka.acks": "-1"}).client["enable.idempotence"] == "true"
    assert "enable.idempotence" not in parse_write_options({**BOOT, "kafka.acks": "1"}).client
    off = parse_write_options({**BOOT, "kafka.enable.idempotence": "false"})
    assert off.client["enable.idempotence"] == "false"


def test_java_tls_settings_become_librdkafkas() -> None:
    client = parse_write_options(
        {
            **BOOT,
            "topic": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": 'x required username="alice" password="secret";',
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/ca.pem",
            "kafka.ssl.keystore.type": "PEM",
            "kafka.ssl.keystore.location": "/client.pem",
            "kafka.ssl.endpoint.identification.algorithm": "",
        }
    ).client
    assert {k: v for k, v in client.items() if k.startswith(("ssl", "sasl", "security"))} == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "secret",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.pem",
        "ssl.endpoint.identification.algorithm": "none",
    }
    pkcs12 = {"kafka.ssl.keystore.type": "PKCS12", "kafka.ssl.keystore.location": "/k.p12"}
    client = parse_write_options({**BOOT, "topic": "t", **pkcs12}).client
    assert client["ssl.keystore.location"] == "/k.p12"
    with pytest.raises(OptionError, match="JKS keystore cannot be read outside the JVM"):
        parse_write_options({**BOOT, "topic": "t", "kafka.ssl.keystore.location": "/k.jks"})


def test_include_timestamp_needs_a_long_timestamp_column() -> None:
    options = parse_write_options({**BOOT, "topic": "t", "includeTimestamp": "true"})
    assert options.include_timestamp
    assert not parse_write_options({**BOOT, "topic": "t"}).include_timestamp
    value = StructField("value", BinaryType())
    check_write_schema(StructType([value, StructField("timestamp", LongType())]), options)
    for bad in ([value], [value, StructField("timestamp", TimestampType())]):
        with pytest.raises(OptionError, match="includeTimestamp needs a 'timestamp' attribute"):
            check_write_schema(StructType(bad), options)
    # without the option a timestamp column is ignored, as Spark's sink ignores it
    check_write_schema(
        StructType([value, StructField("timestamp", StringType())]),
        parse_write_options({**BOOT, "topic": "t"}),
    )
