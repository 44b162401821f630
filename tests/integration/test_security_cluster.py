"""Secured clusters: brokers and controllers log in to each other over the inter-broker and
controller listeners with the clients' own protocols (``strom.testing.Cluster(security=...)``),
and replicate."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.testing import Cluster
from strom.testing.security import Security

pytestmark = [pytest.mark.timeout(240), pytest.mark.xdist_group("cluster")]


@pytest.mark.parametrize(
    "security",
    [
        Security(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN")),
        Security(protocol="SSL", client_auth="required"),
        Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",)),
        Security(protocol="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",)),
    ],
    ids=["sasl_ssl-scram", "mutual-tls", "sasl_plaintext-plain", "sasl_plaintext-oauthbearer"],
)
def test_a_secured_cluster_replicates(security: Security) -> None:
    with Cluster(brokers=2, controllers=1, security=security) as cluster:
        admin = AdminClient(cluster.admin_config())
        admin.create_topics([NewTopic("replicated", 2, 2)])["replicated"].result(30)
        producer = Producer(cluster.producer_config(acks="all"))
        for index in range(10):
            producer.produce("replicated", f"v{index}".encode(), partition=index % 2)
        assert producer.flush(30) == 0
        consumer = Consumer(cluster.consumer_config())
        consumer.subscribe(["replicated"])
        values: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(values) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None and message.value():
                values.add(bytes(message.value() or b""))
        consumer.close()
        assert len(values) == 10
        topic = admin.list_topics("replicated", timeout=10).topics["replicated"]
        for partition in topic.partitions.values():
            assert sorted(partition.isrs) == [1, 2]
