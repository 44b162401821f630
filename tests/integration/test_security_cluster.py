"""Secured clusters: brokers and controllers log in to each other over the inter-broker and
controller listeners with the clients' own protocols (``strom.testing.Cluster(security=...)``),
and replicate."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
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


def test_a_cluster_with_acls_serves_its_own_nodes_and_refuses_others() -> None:
    """The nodes log in as the first user, a super user: registration, replication and the
    forwarded CreateTopics pass; another user is refused with Kafka's error."""
    security = Security(
        protocol="SASL_PLAINTEXT", users={"admin": "admin-secret", "bob": "bob-secret"}
    )
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    with Cluster(brokers=2, controllers=1, security=security, config=config) as cluster:
        admin = AdminClient(cluster.admin_config())
        admin.create_topics([NewTopic("guarded", 1, 2)])["guarded"].result(30)
        producer = Producer(cluster.producer_config(acks="all"))
        producer.produce("guarded", b"v")
        assert producer.flush(30) == 0
        topic = admin.list_topics("guarded", timeout=10).topics["guarded"]
        assert sorted(topic.partitions[0].isrs) == [1, 2]
        assert cluster.security is not None
        bob = AdminClient(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                **cluster.security.client_config("bob"),
            }
        )
        future = bob.create_topics([NewTopic("bobs", 1, 1)], operation_timeout=10)["bobs"]
        with pytest.raises(KafkaException) as raised:
            future.result(30)
        assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
