"""``strom.client.transactions`` against a real server: a transaction a confluent-kafka producer
opened and left is described and committed (or refused) by another client, as the Spark sink's
driver does."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from data_clients import consume, create_topic, unique_topic
from strom_harness import StromServer

from strom.client.transactions import TransactionClient
from strom.common import ErrorCode, KafkaError


def _open_transaction(bootstrap: str, transactional_id: str, topic: str, count: int) -> Any:
    """A producer whose transaction holds ``count`` flushed records and stays open."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(10) == 0
    return producer


def _committed(bootstrap: str, topic: str, count: int) -> list[bytes]:
    settings: dict[str, Any] = {"isolation.level": "read_committed"}
    messages = consume(bootstrap, topic, count=count, timeout=3, **settings)
    return [m.value() for m in messages]


def test_a_transaction_left_open_is_committed_by_another_client(
    strom_server: StromServer,
) -> None:
    bootstrap = strom_server.bootstrap
    topic = create_topic(bootstrap, unique_topic("handover"))
    txn_id = unique_topic("handover-txn")
    producer = _open_transaction(bootstrap, txn_id, topic, 3)
    client = TransactionClient(bootstrap, timeout_ms=10_000)
    try:
        state = client.describe(txn_id)
        assert state.state == "Ongoing"
        assert _committed(bootstrap, topic, 1) == []
        client.end(
            txn_id, producer_id=state.producer_id, producer_epoch=state.producer_epoch, commit=True
        )
        assert _committed(bootstrap, topic, 3) == [b"v0", b"v1", b"v2"]
        # A retried commit succeeds; aborting what was committed does not.
        client.end(
            txn_id, producer_id=state.producer_id, producer_epoch=state.producer_epoch, commit=True
        )
        with pytest.raises(KafkaError) as refused:
            client.end(
                txn_id,
                producer_id=state.producer_id,
                producer_epoch=state.producer_epoch,
                commit=False,
            )
        assert refused.value.error_code == ErrorCode.invalid_txn_state
    finally:
        client.close()
    del producer


def test_a_transaction_of_a_fenced_epoch_cannot_be_committed(strom_server: StromServer) -> None:
    bootstrap = strom_server.bootstrap
    topic = create_topic(bootstrap, unique_topic("fenced"))
    txn_id = unique_topic("fenced-txn")
    zombie = _open_transaction(bootstrap, txn_id, topic, 2)
    client = TransactionClient(bootstrap, timeout_ms=10_000)
    try:
        old = client.describe(txn_id)
        successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        successor.init_transactions(10)  # bumps the epoch, aborting the zombie's transaction
        with pytest.raises(KafkaError) as fenced:
            client.end(
                txn_id, producer_id=old.producer_id, producer_epoch=old.producer_epoch, commit=True
            )
        assert fenced.value.error_code in (
            ErrorCode.producer_fenced,
            ErrorCode.invalid_producer_epoch,
        )
        assert _committed(bootstrap, topic, 1) == []
    finally:
        client.close()
    del zombie


def test_an_unknown_transactional_id_is_named(strom_server: StromServer) -> None:
    client = TransactionClient(strom_server.bootstrap, timeout_ms=10_000)
    try:
        with pytest.raises(KafkaError) as unknown:
            client.describe(unique_topic("nobody"))
        assert unknown.value.error_code == ErrorCode.transactional_id_not_found
    finally:
        client.close()
