"""The pytest plugin ``strom`` (registered by the package's ``pytest11`` entry point).

Fixtures (see docs/testing.md):

- ``strom_session_broker``: one in-process broker for the whole test session.
- ``strom_broker``: a fresh in-process broker for one test (its own empty data directory).
- ``strom_topic``: a new, uniquely named topic on the session broker.
- ``strom_producer_config``, ``strom_consumer_config``, ``strom_admin_config``: confluent-kafka
  settings for the session broker (the consumer reads from the earliest offset, in a group of
  its own).
- ``strom_producer``, ``strom_consumer``, ``strom_admin``: ready confluent-kafka clients,
  flushed or closed after the test; the consumer is assigned every partition of
  ``strom_topic`` from its first offset (no group rebalance to wait for).
- ``strom_faults``: the session broker's fault injection, cleared after the test.
- ``strom_registry``: a schema registry (``strom.testing.Registry``) on the session broker, with
  a ``_schemas`` topic of its own; ``.url`` and ``.client()`` (confluent-kafka's client).

No broker starts unless a test asks for one of these fixtures. ``--strom-kafka-version 3.6``
(or the ``strom_kafka_version`` ini setting) makes the brokers emulate an Apache Kafka release.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the broker is imported when a fixture first needs it, not at plugin load
    from strom.server.network.faults import Faults
    from strom.testing.broker import Broker
    from strom.testing.registry import Registry


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("strom", "strom test brokers")
    group.addoption(
        "--strom-kafka-version",
        default=None,
        help="Apache Kafka release the strom test brokers emulate (for example 3.6).",
    )
    parser.addini("strom_kafka_version", "Apache Kafka release the strom brokers emulate.")


def pytest_configure(config: pytest.Config) -> None:
    """An unknown release stops the run with one usage error, before any test starts."""
    release = _kafka_version(config)
    if release is None:
        return
    from strom.protocol.kafka_releases import release_versions  # noqa: PLC0415

    try:
        release_versions(release)
    except ValueError as error:
        raise pytest.UsageError(f"--strom-kafka-version: {error}") from None


def _kafka_version(config: pytest.Config) -> str | None:
    option = config.getoption("--strom-kafka-version")
    return str(option) if option else (str(config.getini("strom_kafka_version")) or None)


def _broker(config: pytest.Config) -> Broker:
    from strom.testing.broker import Broker  # noqa: PLC0415 - see the imports above

    return Broker(kafka_version=_kafka_version(config))


@pytest.fixture(scope="session")
def strom_session_broker(pytestconfig: pytest.Config) -> Iterator[Broker]:
    with _broker(pytestconfig) as broker:
        yield broker


@pytest.fixture
def strom_broker(pytestconfig: pytest.Config) -> Iterator[Broker]:
    with _broker(pytestconfig) as broker:
        yield broker


@pytest.fixture
def strom_registry(strom_session_broker: Broker) -> Iterator[Registry]:
    """A schema registry of its own (its own ``_schemas`` topic) on the session broker."""
    from strom.testing.registry import Registry  # noqa: PLC0415 - see the imports above

    with Registry(strom_session_broker.bootstrap_servers) as registry:
        yield registry


@pytest.fixture
def strom_topic(strom_session_broker: Broker) -> str:
    return strom_session_broker.create_topic()


@pytest.fixture
def strom_producer_config(strom_session_broker: Broker) -> dict[str, Any]:
    return strom_session_broker.producer_config()


@pytest.fixture
def strom_consumer_config(strom_session_broker: Broker) -> dict[str, Any]:
    return strom_session_broker.consumer_config()


@pytest.fixture
def strom_admin_config(strom_session_broker: Broker) -> dict[str, Any]:
    return strom_session_broker.admin_config()


@pytest.fixture
def strom_producer(strom_producer_config: dict[str, Any]) -> Iterator[Any]:
    from confluent_kafka import Producer  # noqa: PLC0415 - only when asked for

    producer = Producer(strom_producer_config)
    yield producer
    producer.flush(10)


@pytest.fixture
def strom_consumer(strom_consumer_config: dict[str, Any], strom_topic: str) -> Iterator[Any]:
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415 - only when asked for

    consumer = Consumer({**strom_consumer_config, "enable.auto.commit": False})
    partitions = consumer.list_topics(strom_topic, timeout=10).topics[strom_topic].partitions
    consumer.assign([TopicPartition(strom_topic, p, 0) for p in partitions])
    yield consumer
    consumer.close()


@pytest.fixture
def strom_admin(strom_admin_config: dict[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - only when asked for

    return AdminClient(strom_admin_config)


@pytest.fixture
def strom_faults(strom_session_broker: Broker) -> Iterator[Faults]:
    faults = strom_session_broker.faults
    yield faults
    faults.clear()
