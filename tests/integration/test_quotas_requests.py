"""The request quota, the controller mutation rate and throttled fetches, against a real
``strom server`` with real clients.

* ``request_percentage``: a confluent-kafka producer with a tiny quota reads a throttle time in
  its answers (librdkafka's ``throttle_cb``); one without a quota never does.
* ``consumer_byte_rate``: a Fetch that would go over the rate is answered empty, with the
  throttle, as Kafka answers it (the records are not sent; the next fetch gets them).
* ``controller_mutation_rate`` (KIP-599): kafka-python's admin client (CreateTopics v7,
  strict) has topics over the rate refused with THROTTLING_QUOTA_EXCEEDED while another client
  creates its own at once; confluent-kafka's (CreateTopics v4, permissive) has them created and
  its answers throttled.

Quotas are set through AlterClientQuotas (``strom configs`` is tested beside the byte rates).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from data_clients import fetch_v4, produce_v3, records_batch
from kafka.admin import KafkaAdminClient
from kio.schema.alter_client_quotas.v1 import request as alter
from kio.schema.errors import ErrorCode
from kio.static.primitive import f64
from strom_harness import KafkaWire

from strom.testing import Broker

pytestmark = pytest.mark.timeout(120)

THROTTLING_QUOTA_EXCEEDED = 89


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {
        "quota.window.num": 5,
        "quota.window.size.seconds": 1,
        "controller.quota.window.num": 2,
        "controller.quota.window.size.seconds": 1,
    }
    with Broker(process=True, config=config) as started:
        yield started


def wire(broker: Broker) -> KafkaWire:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return KafkaWire(host, int(port))


def set_quota(broker: Broker, client_id: str, key: str, value: float) -> None:
    entry = alter.EntryData(
        entity=(alter.EntityData(entity_type="client-id", entity_name=client_id),),
        ops=(alter.OpData(key=key, value=f64(float(value)), remove=False),),
    )
    with wire(broker) as connection:
        answer = connection.request(
            alter.AlterClientQuotasRequest(entries=(entry,), validate_only=False)
        )
    assert answer.entries[0].error_code == ErrorCode.none, answer


def throttles(events: list[Any]) -> list[float]:
    return [event.throttle_time for event in events if event.throttle_time > 0]


def produce_until_throttled(broker: Broker, client_id: str, topic: str) -> list[Any]:
    """Produce one message at a time (one request each) until an answer is throttled, at
    most 20 requests; the throttle events seen."""
    events: list[Any] = []
    producer = Producer(
        broker.producer_config(
            **{"client.id": client_id, "linger.ms": 0, "throttle_cb": events.append}
        )
    )
    for _ in range(20):
        producer.produce(topic, b"x" * 100)
        assert producer.flush(10) == 0
        producer.poll(0)
        if throttles(events):
            break
    return events


def test_a_client_over_its_request_percentage_is_throttled_and_others_are_not(
    broker: Broker,
) -> None:
    topic = broker.create_topic()
    set_quota(broker, "busy-client", "request_percentage", 0.001)  # 10 µs of a thread a second
    busy = throttles(produce_until_throttled(broker, "busy-client", topic))
    assert busy and all(0 < seconds <= 1.0 for seconds in busy)  # at most one quota window
    assert throttles(produce_until_throttled(broker, "free-client", topic)) == []


def test_a_fetch_over_the_byte_rate_is_answered_empty(broker: Broker) -> None:
    topic = broker.create_topic()
    with wire(broker) as connection:
        for _ in range(8):  # 8 batches of about 10 KB
            answer = connection.request(produce_v3({(topic, 0): records_batch([b"v" * 1000] * 10)}))
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
    set_quota(broker, "fetcher", "consumer_byte_rate", 10_000)  # 40 KB in the 4 s counted
    with wire(broker) as connection:
        connection.send(fetch_v4({(topic, 0): 0}), client_id="fetcher")
        _, first = connection.read_response(api_key=1, api_version=4)
        [partition] = first.responses[0].partitions
        assert partition.records and first.throttle_time.total_seconds() == 0
        next_offset = 30  # the 3 batches that fit under the 40 KB a fetch may take
        connection.send(fetch_v4({(topic, 0): next_offset}), client_id="fetcher")
        _, second = connection.read_response(api_key=1, api_version=4)
    assert second.throttle_time.total_seconds() > 0
    assert second.responses == ()  # nothing read was sent, and its bytes were taken back


def test_topics_over_the_mutation_rate_are_refused_in_strict_mode(broker: Broker) -> None:
    set_quota(broker, "fast-admin", "controller_mutation_rate", 2)  # a burst of 2 s: 4
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="fast-admin")
    try:

        def create(*topics: tuple[str, int]) -> list[int]:
            answer = admin.create_topics(
                {
                    name: {"num_partitions": count, "replication_factor": 1}
                    for name, count in topics
                },
                raise_errors=False,
            )
            return [topic["error_code"] for topic in answer["topics"]]

        assert create(("fast-1", 4)) == [0]  # the whole burst
        assert create(("fast-2", 3)) == [0]  # credits were left: taken, 3 below zero now
        assert create(("fast-3", 1), ("fast-4", 1)) == [THROTTLING_QUOTA_EXCEEDED] * 2
        other = AdminClient(broker.admin_config(**{"client.id": "other-admin"}))
        other.create_topics([NewTopic("other-1", 8, 1)])["other-1"].result(timeout=10)
    finally:
        admin.close()
    listed = AdminClient(broker.admin_config()).list_topics(timeout=10).topics
    assert {"fast-1", "fast-2", "other-1"} <= set(listed)
    assert not {"fast-3", "fast-4"} & set(listed)


def test_older_clients_are_accepted_then_throttled_over_the_mutation_rate(broker: Broker) -> None:
    set_quota(broker, "permissive-admin", "controller_mutation_rate", 2)
    events: list[Any] = []
    admin = AdminClient(
        broker.admin_config(**{"client.id": "permissive-admin", "throttle_cb": events.append})
    )
    for name, partitions in (("slow-1", 6), ("slow-2", 1)):  # 2 over the burst, then more
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=10)
    admin.poll(0.5)
    assert throttles(events) and all(0 < seconds <= 1.6 for seconds in throttles(events))
    assert {"slow-1", "slow-2"} <= set(admin.list_topics(timeout=10).topics)
