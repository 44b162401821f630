"""SASL/SCRAM-SHA-256 and -512 with real clients, credentials managed through the admin API
and ``strom users scram`` (AlterUserScramCredentials, DescribeUserScramCredentials).

The broker is a ``strom server`` process whose cluster starts with the users' credentials
(``strom.testing.Broker(security=...)`` writes them as ``storage format --add-scram`` would).
"""

from __future__ import annotations

import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from secured_clients import (
    aiokafka_config,
    aiokafka_first,
    aiokafka_produce,
    client_config,
    kafka_python_config,
    kafka_python_first,
    kafka_python_produce,
    kcat,
    produce_one,
    requires_kcat,
    strom_as,
    wire,
)
from strom_harness import ConnectionClosed

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_SSL", mechanisms=MECHANISMS)
    with Broker(security=security, process=True) as started:
        yield started


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_over_sasl_ssl(broker: Broker, mechanism: str) -> None:
    topic = broker.create_topic()
    assert produce_one(client_config(broker, "alice", mechanism=mechanism), topic) == []


def test_sasl_plaintext_with_both_mechanisms() -> None:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=MECHANISMS)
    with Broker(security=security, process=True) as plaintext:
        topic = plaintext.create_topic()
        for mechanism in MECHANISMS:
            config = client_config(plaintext, "alice", mechanism=mechanism)
            assert produce_one(config, topic) == []


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "x")])
def test_wrong_password_and_unknown_user(broker: Broker, user: str, password: str) -> None:
    errors = produce_one(client_config(broker, user, password=password), broker.create_topic())
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in errors[0].str()
    assert produce_one(client_config(broker, "alice"), broker.create_topic()) == []


def test_kafka_python_with_scram_sha_512(broker: Broker) -> None:
    topic = broker.create_topic()
    common = kafka_python_config(client_config(broker, "admin", mechanism="SCRAM-SHA-512"))
    kafka_python_produce(common, topic, b"scram")
    assert kafka_python_first(common, topic) == b"scram"


def test_aiokafka_with_scram_sha_256(broker: Broker) -> None:
    topic = broker.create_topic()
    common = aiokafka_config(client_config(broker, "alice", mechanism="SCRAM-SHA-256"))
    aiokafka_produce(common, topic, b"aio-scram")
    assert aiokafka_first(common, topic) == b"aio-scram"


@requires_kcat
def test_kcat_with_scram_sha_512(broker: Broker) -> None:
    topic = broker.create_topic()
    config = client_config(broker, "alice", mechanism="SCRAM-SHA-512")
    kcat(config, "-t", topic, "-P", input=b"k1\n")
    assert kcat(config, "-t", topic, "-C", "-e", "-f", "%s\n").stdout == b"k1\n"


def strom_users(broker: Broker, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``strom users scram ...`` as the admin user."""
    return strom_as(broker, tmp_path, "users", "scram", *args)


def test_strom_users_scram_set_describe_delete(broker: Broker, tmp_path: Path) -> None:
    topic = broker.create_topic()
    carol = client_config(broker, "carol", password="carol-secret", mechanism="SCRAM-SHA-512")
    assert produce_one(carol, topic)[0].code() == KafkaError._AUTHENTICATION
    done = strom_users(
        broker,
        tmp_path,
        "set",
        "--user",
        "carol",
        "--mechanism",
        "SCRAM-SHA-512",
        "--password",
        "carol-secret",
        "--iterations",
        "8192",
    )
    assert done.returncode == 0, done.stderr
    assert "Completed updating SCRAM credentials for user-principal 'carol'" in done.stdout
    assert produce_one(carol, topic, retry_refusals=True) == []  # once the broker has it
    described = strom_users(broker, tmp_path, "describe", "--user", "carol")
    assert described.stdout.strip() == (
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192"
    )
    everyone = strom_users(broker, tmp_path, "describe").stdout
    assert "user-principal 'alice' are SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512" in everyone
    deleted = strom_users(
        broker, tmp_path, "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-512"
    )
    assert deleted.returncode == 0, deleted.stderr
    time.sleep(0.5)  # the broker applies the committed deletion
    assert produce_one(carol, topic)[0].code() == KafkaError._AUTHENTICATION
    missing = strom_users(
        broker, tmp_path, "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-512"
    )
    assert missing.returncode != 0
    assert "does not exist" in missing.stderr


def test_scram_messages_out_of_order_or_garbage_close_that_connection_only(
    broker: Broker,
) -> None:
    for tokens in ([b"c=biws,r=abc,p=AAAA"], [b"\x00garbage"], [b"n,,n=alice,r=abc", b"junk"]):
        with wire(broker, tls=True) as connection:
            handshake = SaslHandshakeRequest(mechanism="SCRAM-SHA-256")
            assert connection.request(handshake).error_code == 0
            for token in tokens[:-1]:
                answer = connection.request(SaslAuthenticateRequest(auth_bytes=token))
                assert answer.error_code == 0
            answer = connection.request(SaslAuthenticateRequest(auth_bytes=tokens[-1]))
            assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
            with pytest.raises((ConnectionClosed, ConnectionResetError, ssl.SSLError)):
                connection.read_frame()
    assert produce_one(client_config(broker, "alice"), broker.create_topic()) == []
