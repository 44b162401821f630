"""Secured clusters: brokers and controllers log in to each other over the inter-broker and
controller listeners with the clients' own protocols (``strom.testing.Cluster(security=...)``),
and replicate."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from secured_clients import client_config, consume, produce

from strom.testing import Cluster
from strom.testing.security import Security

pytestmark = [pytest.mark.timeout(240), pytest.mark.xdist_group("cluster")]


def replicates(cluster: Cluster) -> None:
    """A topic of two partitions on both brokers takes records with acks=all, a group reads
    them all, and every replica is in sync."""
    admin = AdminClient(cluster.admin_config())
    admin.create_topics([NewTopic("replicated", 2, 2)])["replicated"].result(30)
    values = [f"v{index}".encode() for index in range(10)]
    produce(cluster.producer_config(acks="all"), "replicated", values, partitions=2)
    assert sorted(consume(cluster.consumer_config(), "replicated", len(values))) == values
    topic = admin.list_topics("replicated", timeout=10).topics["replicated"]
    for partition in topic.partitions.values():
        assert sorted(partition.isrs) == [1, 2]


@pytest.mark.parametrize(
    "security",
    [
        Security(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN")),
        Security(protocol="SSL", client_auth="required"),
        Security(protocol="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",)),
    ],
    ids=["sasl_ssl-scram", "mutual-tls", "sasl_plaintext-oauthbearer"],
)
def test_a_secured_cluster_replicates(security: Security) -> None:
    """SASL_PLAINTEXT with PLAIN: the cluster with ACLs below."""
    with Cluster(brokers=2, controllers=1, security=security) as cluster:
        replicates(cluster)


def test_a_cluster_with_acls_serves_its_own_nodes_and_refuses_others() -> None:
    """SASL_PLAINTEXT with PLAIN, and ACLs. The nodes log in as the first user, a super user:
    registration, replication and the forwarded CreateTopics pass; another user is refused with
    Kafka's error."""
    security = Security(
        protocol="SASL_PLAINTEXT", users={"admin": "admin-secret", "bob": "bob-secret"}
    )
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    with Cluster(brokers=2, controllers=1, security=security, config=config) as cluster:
        replicates(cluster)
        bob = AdminClient(client_config(cluster, "bob"))
        future = bob.create_topics([NewTopic("bobs", 1, 1)], operation_timeout=10)["bobs"]
        with pytest.raises(KafkaException) as raised:
            future.result(30)
        assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
