"""ACLs (``authorizer.class.name=...StandardAuthorizer``) with real clients over SASL.

One ``strom server`` process with a SASL_PLAINTEXT listener, users admin (``super.users``, also
the broker's own login), alice and bob. Each test grants ACLs through the admin client and
checks that a principal without them gets Kafka's error code while the broker keeps serving
the others: produce and consume with confluent-kafka and kafka-python, groups, admin APIs,
Metadata that hides topics, and kcat where installed.
"""

from __future__ import annotations

import datetime
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import errors as kafka_errors
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v7.response import CreatableTopicResult, CreateTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i16, i32, i32Timedelta
from secured_clients import client_config, kafka_python_config, kcat, requires_kcat, strom_as, wire
from strom_harness import KafkaWire, strom_command

from strom.testing import Broker, unique_topic_name
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", users=USERS)
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    with Broker(security=security, process=True, config=config) as broker:
        yield broker


def admin(broker: Broker, user: str = "admin") -> AdminClient:
    return AdminClient(client_config(broker, user))


def allow(
    broker: Broker,
    user: str,
    operation: AclOperation,
    resource: ResourceType,
    name: str,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    binding = AclBinding(
        resource, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW
    )
    granter = admin(broker)
    granter.create_acls([binding])[binding].result(10)
    return binding


def produce_errors(broker: Broker, user: str, topic: str, **extra: Any) -> list[KafkaError | None]:
    errors: list[KafkaError | None] = []
    producer = Producer(client_config(broker, user, **{"message.timeout.ms": 5000, **extra}))
    producer.produce(topic, b"value", on_delivery=lambda error, _message: errors.append(error))
    producer.flush(15)
    return errors


def consume(broker: Broker, user: str, topic: str, group: str) -> KafkaError | bytes | None:
    """The first message or the first error a consumer of ``group`` gets."""
    consumer = Consumer(
        client_config(broker, user, **{"group.id": group, "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            return error if error is not None else message.value()
        return None
    finally:
        consumer.close()


def acl_filter(
    name: str | None,
    pattern: ResourcePatternType = ResourcePatternType.ANY,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> AclBindingFilter:
    """Every ACL of any principal, host and operation on the patterns ``name`` selects (None:
    any name)."""
    return AclBindingFilter(
        resource_type,
        name,  # type: ignore[arg-type]  # None matches any name
        pattern,
        None,  # type: ignore[arg-type]  # None matches any principal
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def first_code(errors: list[KafkaError | None]) -> int:
    assert errors[0] is not None, errors
    code: int = errors[0].code()
    return code


def test_acls_round_trip_through_the_admin_api(broker: Broker) -> None:
    topic = unique_topic_name("acl")
    binding = allow(
        broker, "alice", AclOperation.READ, ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED
    )
    any_filter = acl_filter(topic, ResourcePatternType.ANY)
    client_admin = admin(broker)
    assert client_admin.describe_acls(any_filter).result(10) == [binding]
    match = acl_filter(topic + "-orders", ResourcePatternType.MATCH)
    assert client_admin.describe_acls(match).result(10) == [binding]
    deleted = client_admin.delete_acls([any_filter])[any_filter].result(10)
    assert deleted == [binding]
    assert client_admin.describe_acls(any_filter).result(10) == []


def test_acl_admin_needs_alter_on_the_cluster(broker: Broker) -> None:
    binding = AclBinding(
        ResourceType.TOPIC,
        "anything",
        ResourcePatternType.LITERAL,
        "User:bob",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )
    bob = admin(broker, "bob")
    with pytest.raises(KafkaException) as raised:
        bob.create_acls([binding])[binding].result(10)
    assert raised.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_produce_and_consume_need_write_and_read(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    group = unique_topic_name("group")
    assert first_code(produce_errors(broker, "bob", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(broker, "alice", AclOperation.WRITE, ResourceType.TOPIC, topic)
    assert produce_errors(broker, "alice", topic) == [None]
    denied = consume(broker, "alice", topic, group)
    assert isinstance(denied, KafkaError)
    assert denied.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    allow(broker, "alice", AclOperation.READ, ResourceType.GROUP, group)
    allow(broker, "alice", AclOperation.READ, ResourceType.TOPIC, topic)
    assert consume(broker, "alice", topic, group) == b"value"
    # bob is still refused, and the broker serves alice meanwhile
    assert first_code(produce_errors(broker, "bob", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_errors(broker, "alice", topic) == [None]


def test_strom_consume_names_the_group_principal_and_the_acl_to_add(
    broker: Broker, tmp_path: Path
) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    group = unique_topic_name("group")
    allow(broker, "bob", AclOperation.READ, ResourceType.TOPIC, topic)
    args = ["consume", topic, "--group", group, "--from-beginning", "--timeout-ms", "20000"]
    result = strom_as(broker, tmp_path, *args, user="bob")
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: GROUP_AUTHORIZATION_FAILED"), result.stderr
    assert error.endswith(
        f"User:bob may not read group {group!r}; an admin can allow it with: "
        f"strom acls add --allow-principal User:bob --operation Read --group {group}"
    )


@pytest.mark.parametrize("verb", ["describe", "delete"])
def test_strom_groups_name_the_principal_and_the_acl_to_add(
    broker: Broker, tmp_path: Path, verb: str
) -> None:
    group = unique_topic_name("group")
    result = strom_as(broker, tmp_path, "groups", verb, group, user="bob")
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: GROUP_AUTHORIZATION_FAILED"), result.stderr
    assert error.endswith(
        f"User:bob may not {verb} group {group!r}; an admin can allow it with: "
        f"strom acls add --allow-principal User:bob --operation {verb.capitalize()} "
        f"--group {group}"
    )


def test_idempotent_producers_need_write_on_some_topic(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    allow(broker, "alice", AclOperation.WRITE, ResourceType.TOPIC, topic)
    assert produce_errors(broker, "alice", topic, **{"enable.idempotence": True}) == [None]
    errors = produce_errors(broker, "bob", topic, **{"enable.idempotence": True})
    assert errors[0] is not None


def test_prefixed_acls_and_deny_wins(broker: Broker) -> None:
    prefix = unique_topic_name("team")
    first = broker.create_topic(f"{prefix}-a")
    second = broker.create_topic(f"{prefix}-b")
    allow(
        broker,
        "alice",
        AclOperation.WRITE,
        ResourceType.TOPIC,
        prefix,
        ResourcePatternType.PREFIXED,
    )
    deny = AclBinding(
        ResourceType.TOPIC,
        second,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    granter = admin(broker)
    granter.create_acls([deny])[deny].result(10)
    assert produce_errors(broker, "alice", first) == [None]
    refused = produce_errors(broker, "alice", second)[0]
    assert refused is not None
    assert refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_hides_topics_a_principal_may_not_describe(broker: Broker) -> None:
    visible = broker.create_topic(unique_topic_name("acl"))
    hidden = broker.create_topic(unique_topic_name("acl"))
    allow(broker, "alice", AclOperation.DESCRIBE, ResourceType.TOPIC, visible)
    topics = admin(broker, "alice").list_topics(timeout=10).topics
    assert visible in topics
    assert hidden not in topics
    named = admin(broker, "alice").list_topics(hidden, timeout=10).topics[hidden]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert hidden in admin(broker).list_topics(timeout=10).topics
    alice = admin(broker, "alice")
    described = alice.describe_topics(
        TopicCollection([visible]), include_authorized_operations=True
    )[visible].result(10)
    assert described.authorized_operations == [AclOperation.DESCRIBE]


def test_admin_apis_answer_kafkas_authorization_errors(broker: Broker) -> None:
    name = unique_topic_name("acl")
    bob = admin(broker, "bob")
    futures = bob.create_topics([NewTopic(name, 1)], operation_timeout=10)
    with pytest.raises(KafkaException) as raised:
        futures[name].result(10)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(broker, "bob", AclOperation.CREATE, ResourceType.TOPIC, name)
    bob.create_topics([NewTopic(name, 1)])[name].result(10)
    deleted = bob.delete_topics([name], operation_timeout=10)[name]
    with pytest.raises(KafkaException) as raised:
        deleted.result(10)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_gets_the_authorization_errors(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    sasl = kafka_python_config(client_config(broker, "bob"))
    producer = KafkaProducer(**sasl, max_block_ms=10000)
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            producer.send(topic, b"value").get(timeout=10)
    finally:
        producer.close(timeout=5)
    allow(broker, "bob", AclOperation.READ, ResourceType.TOPIC, topic)
    consumer = KafkaConsumer(**sasl, group_id=unique_topic_name("group"), consumer_timeout_ms=5000)
    try:
        consumer.subscribe([topic])
        with pytest.raises(kafka_errors.GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
    finally:
        consumer.close()


def test_committed_offsets_need_describe_on_the_topic(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    group = unique_topic_name("group")
    allow(broker, "bob", AclOperation.DESCRIBE, ResourceType.GROUP, group)
    consumer = Consumer(client_config(broker, "bob", **{"group.id": group}))
    try:
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.error is not None
        assert committed.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        allow(broker, "bob", AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.error is None
    finally:
        consumer.close()


@requires_kcat
def test_kcat_is_refused_without_write(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    bob = client_config(broker, "bob", **{"message.timeout.ms": "5000"})
    result = kcat(bob, "-P", "-t", topic, input=b"value\n", check=False)
    assert b"Topic authorization failed" in result.stderr


def strom_acls(broker: Broker, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``strom acls ...`` as the admin user."""
    return strom_as(broker, tmp_path, "acls", *args)


def test_strom_acls_add_list_remove(broker: Broker, tmp_path: Path) -> None:
    topic = broker.create_topic(unique_topic_name("cli"))
    group = unique_topic_name("group")
    added = strom_acls(
        broker, tmp_path, "add", "--allow-principal", "User:alice", "--consumer",
        "--topic", topic, "--group", group,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, " in (
        added.stdout
    )
    prefixed = strom_acls(
        broker, tmp_path, "add", "--allow-principal", "User:alice", "--operation", "Write",
        "--topic", f"{topic}-", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert prefixed.returncode == 0, prefixed.stderr
    listed = strom_acls(broker, tmp_path, "list", "--topic", topic).stdout
    assert listed == (
        f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n"
    )
    matching = strom_acls(
        broker, tmp_path, "list", "--topic", f"{topic}-x", "--resource-pattern-type", "match"
    ).stdout
    assert "patternType=PREFIXED" in matching
    assert "operation=WRITE" in matching
    removed = strom_acls(broker, tmp_path, "remove", "--topic", topic, "--group", group, "--force")
    assert removed.returncode == 0, removed.stderr
    assert strom_acls(broker, tmp_path, "list", "--topic", topic).stdout == ""
    denied = consume(broker, "alice", topic, group)
    assert isinstance(denied, KafkaError)
    assert denied.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_strom_acls_names_delegation_tokens_and_user_principals(
    broker: Broker, tmp_path: Path
) -> None:
    """Resource types librdkafka does not know go over strom's own client, as kafka-acls.sh's
    ``--delegation-token`` and ``--user-principal``."""
    token, user = unique_topic_name("token"), f"User:{unique_topic_name('owner')}"
    added = strom_acls(
        broker, tmp_path, "add", "--allow-principal", "User:alice", "--operation", "Describe",
        "--delegation-token", token,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(
        f"Adding ACLs for resource `ResourcePattern(resourceType=DELEGATION_TOKEN, name={token}, "
        "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=DESCRIBE, "
        "permissionType=ALLOW) \n"
    )
    tokens = strom_acls(
        broker, tmp_path, "add", "--allow-principal", "User:bob", "--operation", "CreateTokens",
        "--operation", "DescribeTokens", "--user-principal", user,
    )  # fmt: skip
    assert tokens.returncode == 0, tokens.stderr
    listed = strom_acls(broker, tmp_path, "list", "--delegation-token", token).stdout
    assert listed == (
        f"Current ACLs for resource `ResourcePattern(resourceType=DELEGATION_TOKEN, name={token}, "
        "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=DESCRIBE, "
        "permissionType=ALLOW) \n\n"
    )
    everything = strom_acls(broker, tmp_path, "list", "--principal", "User:bob").stdout
    assert f"resourceType=USER, name={user}, patternType=LITERAL" in everything
    assert "operation=CREATE_TOKENS" in everything and "operation=DESCRIBE_TOKENS" in everything
    assert "resourceType=UNKNOWN" not in strom_acls(broker, tmp_path, "list").stdout
    removed = strom_acls(broker, tmp_path, "remove", "--delegation-token", token,
                         "--user-principal", user, "--force")  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert strom_acls(broker, tmp_path, "list", "--delegation-token", token).stdout == ""
    assert strom_acls(broker, tmp_path, "list", "--user-principal", user).stdout == ""
    refused = strom_acls(broker, tmp_path, "add", "--allow-principal", "alice",
                         "--delegation-token", token)  # fmt: skip
    assert refused.returncode != 0 and "must be TYPE:NAME" in refused.stderr


def test_the_authorizer_class_must_be_the_standard_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *strom_command(),
            "server",
            "--override",
            f"log.dirs={tmp_path}",
            "--override",
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "authorizer.class.name" in result.stderr


def test_configs_need_describe_configs_and_alter_configs(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    bob = admin(broker, "bob")
    with pytest.raises(KafkaException) as raised:
        bob.describe_configs([resource])[resource].result(10)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(broker, "bob", AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, topic)
    described = bob.describe_configs([resource])[resource].result(10)  # implied by AlterConfigs
    assert "retention.ms" in described
    retention = ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
    change = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[retention])
    bob.incremental_alter_configs([change])[change].result(10)
    broker_resource = ConfigResource(ResourceType.BROKER, "1")
    with pytest.raises(KafkaException) as raised:
        bob.describe_configs([broker_resource])[broker_resource].result(10)
    assert raised.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def logged_in(broker: Broker, user: str) -> KafkaWire:
    """A raw connection to ``broker`` authenticated as ``user`` (SASL PLAIN)."""
    connection = wire(broker)
    assert connection.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    login = SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{USERS[user]}".encode())
    assert connection.request(login).error_code == 0
    return connection


def created_as(broker: Broker, user: str, topic: str) -> CreatableTopicResult:
    """The CreateTopics v7 answer to ``user`` creating ``topic`` (2 partitions)."""
    with logged_in(broker, user) as connection:
        creatable = CreatableTopic(
            name=TopicName(topic),
            num_partitions=i32(2),
            replication_factor=i16(1),
            assignments=(),
            configs=(CreatableTopicConfig(name="retention.ms", value="60000"),),
        )
        request = CreateTopicsRequest(
            topics=(creatable,), timeout=i32Timedelta.parse(datetime.timedelta(seconds=10))
        )
        response: CreateTopicsResponse = connection.request(request)
    (result,) = response.topics
    return result


def test_create_topics_answers_the_configs_only_to_who_may_describe_them(broker: Broker) -> None:
    hidden, shown = unique_topic_name("acl"), unique_topic_name("acl")
    for topic in (hidden, shown):
        allow(broker, "bob", AclOperation.CREATE, ResourceType.TOPIC, topic)
    allow(broker, "bob", AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, shown)
    refused = created_as(broker, "bob", hidden)
    assert refused.error_code == 0 and refused.topic_id is not None  # created all the same
    assert refused.topic_config_error_code == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert (refused.num_partitions, refused.replication_factor, refused.configs) == (-1, -1, ())
    answered = created_as(broker, "bob", shown)
    assert answered.error_code == 0 and answered.topic_config_error_code == 0
    assert (answered.num_partitions, answered.replication_factor) == (2, 1)
    configs = {config.name: config.value for config in answered.configs or ()}
    assert configs["retention.ms"] == "60000"
    operator = admin(broker)
    topics = operator.describe_topics(TopicCollection([hidden]))
    assert len(topics[hidden].result(10).partitions) == 2


def test_acls_outlive_a_restart(tmp_path: Path) -> None:
    security = Security(protocol="SASL_PLAINTEXT", users=USERS)
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    data_dir = tmp_path / "data"
    with Broker(security=security, process=True, config=config, data_dir=data_dir) as first:
        binding = allow(first, "alice", AclOperation.READ, ResourceType.GROUP, "billing")
    with Broker(security=security, process=True, config=config, data_dir=data_dir) as second:
        everything = acl_filter(None, resource_type=ResourceType.ANY)
        assert admin(second).describe_acls(everything).result(10) == [binding]


def test_an_offset_fetch_of_a_group_it_may_not_describe_creates_nothing(tmp_path: Path) -> None:
    """The group ACL is checked before the offsets topic is created: a principal with no
    rights must not make a fresh broker create ``__consumer_offsets``."""
    security = Security(protocol="SASL_PLAINTEXT", users=USERS)
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    with Broker(security=security, process=True, config=config, data_dir=tmp_path) as fresh:
        request = OffsetFetchRequest(
            group_id=GroupId("secret"),
            topics=(OffsetFetchRequestTopic(name=TopicName("t"), partition_indexes=(i32(0),)),),
            require_stable=False,
        )
        with logged_in(fresh, "bob") as connection:
            answer = connection.request(request)
        assert answer.error_code == ErrorCode.group_authorization_failed
        assert "__consumer_offsets" not in admin(fresh).list_topics(timeout=10).topics


def test_transactions_need_write_on_the_transactional_id(broker: Broker) -> None:
    topic = broker.create_topic(unique_topic_name("acl"))
    transactional_id = unique_topic_name("tx")
    allow(broker, "bob", AclOperation.WRITE, ResourceType.TOPIC, topic)
    refused = Producer(client_config(broker, "bob", **{"transactional.id": transactional_id}))
    with pytest.raises(KafkaException) as raised:
        refused.init_transactions(20)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allow(broker, "bob", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
    producer = Producer(client_config(broker, "bob", **{"transactional.id": transactional_id}))
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(20)


def test_the_kafka_tool_commands_take_the_command_config(broker: Broker, tmp_path: Path) -> None:
    """Through SASL with --command-config: strom's own client as librdkafka; DescribeProducers
    needs Read on the topic."""
    topic = broker.create_topic(unique_topic_name("tools"))
    produce_errors(broker, "admin", topic)
    partition = ["--topic", topic, "--partition", "0"]
    for args in (
        ["get-offsets", "--topic", topic],
        ["log-dirs", "--describe", "--topic-list", topic],
        ["transactions", "list"],
        ["transactions", "describe-producers", *partition],
        ["features", "describe"],
    ):
        result = strom_as(broker, tmp_path, *args)
        assert result.returncode == 0, (args, result.stderr)
    assert strom_as(broker, tmp_path, "get-offsets", "--topic", topic).stdout == f"{topic}:0:1\n"
    allow(broker, "bob", AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
    refused = strom_as(
        broker, tmp_path, "transactions", "describe-producers", *partition, user="bob"
    )
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"Error: Failed to describe producers for partition {topic}-0 on leader: "
        "TOPIC_AUTHORIZATION_FAILED"
    ]
