"""A partition that leaves its leader answers the produces waiting on it (issue 24, part 2).

An acks=all produce waits on its leader because a follower is paused (SIGSTOP: it stays in the
ISR, its session and lag time being long). The topic is deleted meanwhile: the leader must
answer that produce at once with the partition's error, and go on answering the requests that
follow on the same connection (responses are ordered per connection, so one unanswered
request holds back every later one). librdkafka's test 0107 met this. (A broker that applies
the deletion and the topic's re-creation in one metadata change, from a snapshot, is the case
that stalled; tests/unit/server/replica/test_leaving_partitions.py draws it.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")

_LONG = 120_000
"""ms: no timeout of the producer or the brokers ends the wait in this test."""


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    slow = {
        "broker.session.timeout.ms": _LONG,
        "replica.lag.time.max.ms": _LONG,
        "replica.socket.timeout.ms": _LONG,
        "auto.create.topics.enable": "false",
    }
    with Cluster(brokers=3, controllers=1, config=slow) as running:
        yield running


def _create(admin: AdminClient, topic: NewTopic) -> None:
    admin.create_topics([topic], operation_timeout=30)[topic.topic].result(timeout=60)


def test_deleting_a_topic_answers_the_produce_waiting_on_it(cluster: Cluster) -> None:
    admin = AdminClient(cluster.admin_config())
    leader, follower = 1, 2
    parked, other = unique_topic_name("parked"), unique_topic_name("other")
    _create(admin, NewTopic(parked, num_partitions=1, replica_assignment=[[leader, follower, 3]]))
    _create(admin, NewTopic(other, num_partitions=1, replica_assignment=[[leader]]))
    outcomes: dict[str, KafkaError | None] = {}

    def report(error: KafkaError | None, message: object) -> None:
        outcomes[message.topic()] = error  # type: ignore[attr-defined]

    producer = Producer(
        {
            **cluster.producer_config(),
            "acks": "all",
            "message.timeout.ms": _LONG,
            "request.timeout.ms": _LONG,
            "socket.timeout.ms": _LONG,
            "max.in.flight.requests.per.connection": 5,
            "topic.metadata.propagation.max.ms": 1_000,
        }
    )
    producer.produce(other, b"warm-up", on_delivery=report)
    assert producer.flush(30) == 0
    assert outcomes.pop(other) is None
    cluster.pause(follower)
    try:
        producer.produce(parked, b"waits", on_delivery=report)
        producer.poll(2)
        assert outcomes == {}  # parked on the leader: the follower does not fetch
        admin.delete_topics([parked], operation_timeout=30)[parked].result(timeout=60)
        producer.produce(other, b"after", on_delivery=report)
        deadline = time.monotonic() + 20
        while other not in outcomes and time.monotonic() < deadline:
            producer.poll(0.5)
        assert other in outcomes, "the leader answers nothing more on the producer's connection"
        assert outcomes[other] is None
    finally:
        cluster.resume(follower)
    assert producer.flush(30) == 0
    assert parked in outcomes
    error = outcomes[parked]
    assert error is not None, "the produce to the deleted topic was acknowledged"
