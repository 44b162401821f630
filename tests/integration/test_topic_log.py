"""``TopicLog.catch_up`` against a real ``strom server``: when the topic's ends cannot be learnt
in time (a loaded or unreachable broker), it raises ``TopicLogTimeout``, which every owner of a
log handles (Connect's 500 and its retries, the registry's), not librdkafka's KafkaException,
which ended the Connect worker's membership thread under the suite's load."""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Consumer

from strom.client.topic_log import TopicLog, TopicLogTimeout


def test_ends_not_learnt_in_time_are_a_timeout(bootstrap: str) -> None:
    applied: list[bytes | None] = []
    log = TopicLog(
        topic=f"topic-log-{uuid.uuid4().hex[:8]}",
        client={"bootstrap.servers": bootstrap},
        apply=lambda key, value: applied.append(value),
        lock=threading.Lock(),
        replication_factor=1,
        timeout=10,
    )
    log.start()
    try:
        log.write([(b"k", b"v")])
        log.catch_up()
        assert applied == [b"v"]
        # the ends asked of a broker that does not answer: a real client's timeout
        log._watermarks = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "none"})
        log.timeout = 0.5
        with pytest.raises(TopicLogTimeout):
            log.catch_up()
    finally:
        log.stop()
