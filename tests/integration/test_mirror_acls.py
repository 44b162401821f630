"""The mirror and ACLs, on a real SASL_PLAINTEXT ``strom server`` with ``StandardAuthorizer``
where alice may describe ``orders`` but not read it: ``strom mirror`` refuses, in one line before
anything starts, a flow naming a topic its source cluster's user may not read; and
``sync.topic.acls.enabled`` gives remote topics their source topics' ACLs as MM2 does."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from secured_clients import client_config
from strom_harness import strom_command

from strom.connect.connectors.mirror.clients import Cluster, TopicSync
from strom.connect.connectors.mirror.maker import MirrorMaker
from strom.connect.connectors.mirror.mm2config import MirrorMakerConfig
from strom.connect.connectors.mirror.policy import Flow
from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", users=USERS)
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    with Broker(security=security, process=True, config=config) as broker:
        admin = AdminClient(client_config(broker, "admin"))
        for topic in ("orders", "open"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        bindings = [
            AclBinding(
                ResourceType.TOPIC,
                topic,
                ResourcePatternType.LITERAL,
                "User:alice",
                "*",
                operation,
                AclPermissionType.ALLOW,
            )
            for topic, operation in [
                ("orders", AclOperation.DESCRIBE),
                ("open", AclOperation.DESCRIBE),
                ("open", AclOperation.READ),
            ]
        ]
        for future in admin.create_acls(bindings).values():
            future.result(10)
        yield broker


def _mirror(broker: Broker, tmp_path: Path, topics: str) -> subprocess.CompletedProcess[str]:
    """``strom mirror`` of A (the broker, as alice) to B (the broker, as admin); B's own
    cluster check passes, so a refusal is about A's topics."""
    lines = ["clusters = A, B", "A->B.enabled = true", f"A->B.topics = {topics}"]
    for alias, user in (("A", "alice"), ("B", "admin")):
        lines += [f"{alias}.{k} = {v}" for k, v in client_config(broker, user).items()]
    config = tmp_path / "mm2.properties"
    config.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [*strom_command(), "mirror", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_topic_the_source_user_may_not_read_is_named(broker: Broker, tmp_path: Path) -> None:
    result = _mirror(broker, tmp_path, "open, orders")
    assert result.returncode == 1, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("Error:")]
    assert "A->B.topics: cluster A does not let alice read topic 'orders'" in line
    assert "strom acls add --allow-principal User:alice --operation Read" in line


def test_a_topic_the_source_user_may_not_see_is_named(broker: Broker, tmp_path: Path) -> None:
    result = _mirror(broker, tmp_path, "secret-topic")  # alice may not even describe it
    assert result.returncode == 1, result.stderr
    assert "does not let alice read topic 'secret-topic'" in result.stderr


def test_topics_the_source_user_may_read_pass(broker: Broker) -> None:
    values = {"clusters": "A, B", "A->B.enabled": "true", "A->B.topics": "open, orders-.*"}
    for alias, user in (("A", "alice"), ("B", "admin")):
        values |= {f"{alias}.{k}": str(v) for k, v in client_config(broker, user).items()}
    MirrorMaker(MirrorMakerConfig.of(values)).check_clusters()  # regexes are not checked


def test_topic_acls_are_synced_as_mm2_does(broker: Broker) -> None:
    extra = [("open", "User:bob", AclOperation.ALL), ("open", "User:carol", AclOperation.WRITE)]
    admin = AdminClient(client_config(broker, "admin"))
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for topic, principal, operation in extra
    ]
    for future in admin.create_acls(bindings).values():
        future.result(10)
    config = {"source.cluster.alias": "A", "target.cluster.alias": "B", "topics": "open"}
    java = {k: str(v) for k, v in client_config(broker, "admin").items()}
    sync = TopicSync(Flow.of(config), Cluster("A", java), Cluster("B", java), config)
    assert sync.sync_acls() == 3  # alice's Describe and Read, bob's All as Read; not Write
    remote = AclBindingFilter(
        ResourceType.TOPIC,
        "A.open",
        ResourcePatternType.LITERAL,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    found = admin.describe_acls(remote).result(10)
    assert {(acl.principal, acl.operation) for acl in found} == {
        ("User:alice", AclOperation.DESCRIBE),
        ("User:alice", AclOperation.READ),
        ("User:bob", AclOperation.READ),
    }
