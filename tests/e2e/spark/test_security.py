"""The Spark source and sink over SASL_SSL (SCRAM-SHA-512), with the ``kafka.`` options a
Spark user of Kafka writes: ``kafka.security.protocol``, ``kafka.sasl.mechanism``,
``kafka.sasl.jaas.config`` and a PEM truststore (``kafka.ssl.truststore.*``)."""

from __future__ import annotations

from collections.abc import Iterator

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


def test_read_and_write_over_sasl_ssl(spark: SparkSession, secured: Broker) -> None:
    assert secured.security is not None
    source = create_topic(secured, "spark-secured-in")
    sink = create_topic(secured, "spark-secured-out")
    producer = Producer(secured.producer_config())
    for value in (b"one", b"two", b"three"):
        producer.produce(source, value)
    assert producer.flush(15) == 0

    options = spark_options(secured)
    read = (
        spark.read.format("strom")
        .options(**options)
        .option("subscribe", source)
        .load()
        .selectExpr("upper(cast(value as string)) as value")
    )
    read.write.format("strom").options(**options).option("topic", sink).mode("append").save()

    consumer = Consumer(
        {**secured.consumer_config(), "group.id": "check", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([sink])
    got: list[bytes] = []
    try:
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
            if len(got) == 3:
                break
    finally:
        consumer.close()
    assert sorted(got) == [b"ONE", b"THREE", b"TWO"]
