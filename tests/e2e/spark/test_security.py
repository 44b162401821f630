"""The Spark source and sink over SASL_SSL (SCRAM-SHA-512), with the ``kafka.`` options a
Spark user of Kafka writes: ``kafka.security.protocol``, ``kafka.sasl.mechanism``,
``kafka.sasl.jaas.config`` and a PEM truststore (``kafka.ssl.truststore.*``); a batch copy,
and an exactly-once streaming copy (whose driver ends the transactions over the same options)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(300)

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    security = Security(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512",))
    with Broker(security=security, process=True) as broker:
        yield broker


def spark_options(broker: Broker) -> dict[str, str]:
    assert broker.security is not None
    return {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": JAAS,
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(broker.security.ca_file),
    }


def create_topic(broker: Broker, name: str) -> str:
    client = AdminClient(broker.admin_config())
    client.create_topics([NewTopic(name, 1, 1)], operation_timeout=10)[name].result(15)
    return name


def read_back(broker: Broker, topic: str, count: int) -> list[bytes]:
    """``count`` values of ``topic`` as a read_committed consumer sees them."""
    consumer = Consumer(
        {**broker.consumer_config(), "group.id": topic, "auto.offset.reset": "earliest",
         "isolation.level": "read_committed"}
    )  # fmt: skip
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
            if len(got) == count:
                break
    finally:
        consumer.close()
    return sorted(got)


def fill(broker: Broker, topic: str) -> None:
    producer = Producer(broker.producer_config())
    for value in (b"one", b"two", b"three"):
        producer.produce(topic, value)
    assert producer.flush(15) == 0


def test_read_and_write_over_sasl_ssl(spark: SparkSession, secured: Broker) -> None:
    assert secured.security is not None
    source = create_topic(secured, "spark-secured-in")
    sink = create_topic(secured, "spark-secured-out")
    fill(secured, source)

    options = spark_options(secured)
    read = (
        spark.read.format("strom")
        .options(**options)
        .option("subscribe", source)
        .load()
        .selectExpr("upper(cast(value as string)) as value")
    )
    read.write.format("strom").options(**options).option("topic", sink).mode("append").save()

    assert read_back(secured, sink, 3) == [b"ONE", b"THREE", b"TWO"]


def test_exactly_once_streaming_over_sasl_ssl(
    spark: SparkSession, secured: Broker, tmp_path: Path
) -> None:
    source = create_topic(secured, "spark-secured-eos-in")
    sink = create_topic(secured, "spark-secured-eos-out")
    fill(secured, source)
    options = spark_options(secured)
    stream = (
        spark.readStream.format("strom")
        .options(**options)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("value")
    )
    query = (
        stream.writeStream.format("strom")
        .options(**options)
        .option("topic", sink)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert read_back(secured, sink, 3) == [b"one", b"three", b"two"]
