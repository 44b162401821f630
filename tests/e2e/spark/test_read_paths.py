"""The source's two read paths against secured brokers: a client certificate in PEM files goes
the fast path (the tasks' own Fetch connections, ``strom.spark.fetch``); a PKCS12 keystore, a
key given inline, and librdkafka's OAUTHBEARER login are settings only librdkafka honours, and
the tasks read through it instead of refusing the query (the settings worked before the source
fetched for itself, and must go on working)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(300)

VALUES = [b"one", b"two", b"three"]


@pytest.fixture(scope="module")
def mutual_tls() -> Iterator[Broker]:
    """A broker that asks every client for a certificate."""
    with Broker(security=Security(protocol="SSL", client_auth="required"), process=True) as broker:
        yield broker


@pytest.fixture(scope="module")
def oauthbearer() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    with Broker(security=security, process=True) as broker:
        yield broker


def filled_topic(broker: Broker, name: str) -> str:
    client = AdminClient(broker.admin_config())
    client.create_topics([NewTopic(name, 1, 1)], operation_timeout=10)[name].result(15)
    producer = Producer(broker.producer_config())
    for value in VALUES:
        producer.produce(name, value)
    assert producer.flush(15) == 0
    return name


def read_values(
    spark: SparkSession, broker: Broker, topic: str, options: dict[str, str]
) -> list[bytes]:
    rows = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("kafkaConsumer.pollTimeoutMs", "20000")
        .options(**options)
        .load()
        .select("value")
        .collect()
    )
    return sorted(row.value for row in rows)


def tls_options(broker: Broker) -> dict[str, str]:
    assert broker.security is not None
    return {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(broker.security.ca_file),
    }


def test_a_keystore_in_pem_files(spark: SparkSession, mutual_tls: Broker, tmp_path: Path) -> None:
    """The fast path: Python's ssl reads the key and chain file."""
    assert mutual_tls.security is not None
    issued = mutual_tls.security.ca.issue("alice", client=True)
    keystore = issued.write_keystore_pem(tmp_path / "alice.pem")
    topic = filled_topic(mutual_tls, "spark-read-pem-files")
    options = {
        **tls_options(mutual_tls),
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.location": str(keystore),
    }
    assert read_values(spark, mutual_tls, topic, options) == sorted(VALUES)


def test_a_pkcs12_keystore(spark: SparkSession, mutual_tls: Broker, tmp_path: Path) -> None:
    assert mutual_tls.security is not None
    keystore = mutual_tls.security.ca.issue("alice", client=True).write_pkcs12(
        tmp_path / "alice.p12", "store-secret"
    )
    topic = filled_topic(mutual_tls, "spark-read-pkcs12")
    options = {
        **tls_options(mutual_tls),
        "kafka.ssl.keystore.type": "PKCS12",
        "kafka.ssl.keystore.location": str(keystore),
        "kafka.ssl.keystore.password": "store-secret",
    }
    assert read_values(spark, mutual_tls, topic, options) == sorted(VALUES)


def test_a_key_given_inline(spark: SparkSession, mutual_tls: Broker) -> None:
    assert mutual_tls.security is not None
    issued = mutual_tls.security.ca.issue("alice", client=True)
    topic = filled_topic(mutual_tls, "spark-read-inline-key")
    options = {
        **tls_options(mutual_tls),
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.key": issued.key_pem,
        "kafka.ssl.keystore.certificate.chain": issued.chain_pem,
    }
    assert read_values(spark, mutual_tls, topic, options) == sorted(VALUES)


def test_librdkafkas_oauthbearer_login(spark: SparkSession, oauthbearer: Broker) -> None:
    topic = filled_topic(oauthbearer, "spark-read-oauthbearer")
    options = {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.enable.sasl.oauthbearer.unsecure.jwt": "true",
        "kafka.sasl.oauthbearer.config": "principal=alice",
    }
    assert read_values(spark, oauthbearer, topic, options) == sorted(VALUES)
