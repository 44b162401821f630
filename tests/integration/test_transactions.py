"""Transactions against a real ``strom server``: confluent-kafka's and kafka-python's
transactional producers commit and abort as read_committed and read_uncommitted consumers must
see it; a zombie producer is fenced; a transaction past its timeout is aborted; one left open
across a kill -9 is resolved after the restart; DescribeTransactions and ListTransactions and
the coordinator's errors over the wire."""

from __future__ import annotations

import datetime
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from data_clients import (
    consumer,
    coordinator_request,
    create_topic,
    produce_v3,
    records_batch,
    unique_topic,
)
from kafka import KafkaProducer
from kio.schema.add_partitions_to_txn.v1 import request as add_v1
from kio.schema.add_partitions_to_txn.v3 import request as add_v3
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64
from strom_harness import KafkaWire, StartServer, StromServer, start_strom_server

from strom.protocol import lenient
from strom.protocol.api import ApiKey, decode_response
from strom.testing import Broker

pytestmark = pytest.mark.timeout(60)

OVERRIDES = {
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.num.partitions": "5",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    base = tmp_path_factory.mktemp("strom-txn")
    started = start_strom_server(data_dir=base / "data", cwd=base, overrides=OVERRIDES)
    yield started
    started.stop(signal.SIGTERM)


def _producer(bootstrap: str, transactional_id: str, **extra: Any) -> Any:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **extra})


def _values(bootstrap: str, topic: str, *, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every value of ``topic`` read with ``isolation``, sorted: a plain record appended to
    each partition first marks the end, so the read stops exactly there."""
    mark = b"end-" + uuid.uuid4().hex.encode()
    marker = Producer({"bootstrap.servers": bootstrap})
    for partition in range(partitions):
        marker.produce(topic, value=mark, partition=partition)
    assert marker.flush(10) == 0
    reader = consumer(bootstrap, **{"isolation.level": isolation})
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        ends = 0
        deadline = time.monotonic() + 20
        while ends < partitions and time.monotonic() < deadline:
            message = reader.poll(0.2)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            if message.value() == mark:
                ends += 1
            elif not message.value().startswith(b"end-"):
                values.append(message.value())
        assert ends == partitions, "the end marks were not read"
        return sorted(values)
    finally:
        reader.close()


def test_commit_and_abort_with_confluent_kafka(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn"), partitions=2)
    producer = _producer(server.bootstrap, unique_topic("tx"))
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, value=b"c%d" % i, partition=i % 2)
    producer.commit_transaction(10)
    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, value=b"a%d" % i, partition=i % 2)
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"c-last", partition=0)
    producer.commit_transaction(10)

    committed = sorted([b"c%d" % i for i in range(6)] + [b"c-last"])
    aborted = [b"a%d" % i for i in range(4)]
    assert _values(server.bootstrap, topic, isolation="read_committed", partitions=2) == committed
    assert _values(server.bootstrap, topic, isolation="read_uncommitted", partitions=2) == sorted(
        committed + aborted
    )


def test_commit_and_abort_with_kafka_python(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn-kp"))
    producer = KafkaProducer(
        bootstrap_servers=server.bootstrap, transactional_id=unique_topic("kp-tx")
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"kept", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"dropped", partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    assert _values(server.bootstrap, topic, isolation="read_committed") == [b"kept"]
    assert _values(server.bootstrap, topic, isolation="read_uncommitted") == [
        b"dropped",
        b"kept",
    ]


def test_a_zombie_producer_is_fenced(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn-zombie"))
    transactional_id = unique_topic("zombie")
    zombie = _producer(server.bootstrap, transactional_id)
    zombie.init_transactions(10)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(10)

    successor = _producer(server.bootstrap, transactional_id)
    successor.init_transactions(10)  # aborts the zombie's transaction, bumps the epoch
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=0)
    successor.commit_transaction(10)

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(10)
    assert raised.value.args[0].fatal()
    assert _values(server.bootstrap, topic, isolation="read_committed") == [b"successor"]


TIMED_OUT: Final = {"transaction.timeout.ms": 1000, "message.timeout.ms": 1000}
"""A producer whose transactions the coordinator soon aborts itself."""


def _timed_out_transaction(server: StromServer, topic: str, transactional_id: str) -> Any:
    """A producer whose open transaction (one record in ``topic``) the coordinator aborted
    when its timeout passed."""
    producer = _producer(server.bootstrap, transactional_id, **TIMED_OUT)
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"late", partition=0)
    producer.flush(10)
    with server.connect() as wire:
        assert _wait_for_state(wire, transactional_id, "CompleteAbort")
    return producer


def test_a_transaction_past_its_timeout_is_aborted(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn-timeout"))
    producer = _timed_out_transaction(server, topic, unique_topic("slow"))
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    assert _values(server.bootstrap, topic, isolation="read_committed") == []


def test_abort_after_the_coordinator_timed_the_transaction_out(server: StromServer) -> None:
    """As with Kafka: the coordinator's abort bumped the epoch, so librdkafka's abort is fenced
    (fatal _FENCED, never INVALID_TXN_STATE), nothing of the transaction is read, and a new
    producer instance with the same transactional id goes on."""
    topic = create_topic(server.bootstrap, unique_topic("txn-timeout-abort"))
    transactional_id = unique_topic("timed-out")
    producer = _timed_out_transaction(server, topic, transactional_id)
    with pytest.raises(KafkaException) as raised:
        producer.abort_transaction(10)
    assert raised.value.args[0].fatal()
    assert raised.value.args[0].code() == KafkaError._FENCED
    successor = _producer(server.bootstrap, transactional_id, **TIMED_OUT)
    successor.init_transactions(10)
    successor.begin_transaction()
    successor.produce(topic, value=b"next", partition=0)
    successor.commit_transaction(10)
    assert _values(server.bootstrap, topic, isolation="read_committed") == [b"next"]


def test_abort_after_messages_timed_out_in_flight_bumps_the_epoch_and_goes_on() -> None:
    """Produce answers held past ``message.timeout.ms``: librdkafka times the messages out
    while in flight (they may be written), aborts with EndTxn, then bumps its epoch with
    InitProducerId (KIP-360, its own id and epoch); both succeed, as in Kafka, and the next
    transaction commits. Only the transaction's timeout fences (see the test above)."""
    with Broker() as broker:
        topic = broker.create_topic()
        producer = Producer(
            broker.producer_config(
                **{
                    "transactional.id": unique_topic("in-flight"),
                    "transaction.timeout.ms": 30_000,
                    "message.timeout.ms": 1500,
                }
            )
        )
        producer.init_transactions(10)
        producer.begin_transaction()
        broker.faults.delay("Produce", 3.0)
        producer.produce(topic, value=b"timed-out", partition=0)
        producer.flush(10)
        broker.faults.clear()
        producer.abort_transaction(15)
        producer.begin_transaction()
        producer.produce(topic, value=b"next", partition=0)
        producer.commit_transaction(10)
        assert _values(broker.bootstrap_servers, topic, isolation="read_committed") == [b"next"]


def test_a_replaced_instance_cannot_pass_its_old_epoch_off_as_a_retry(server: StromServer) -> None:
    txn = unique_topic("replaced")
    with server.connect() as wire:
        # The file's first request when run alone: the coordinator may still be loading.
        first = coordinator_request(wire, _init_request(txn), lambda r: r.error_code)
        assert (first.error_code, first.producer_epoch) == (ErrorCode.none, 0)
        pid = int(first.producer_id)
        assert _init(wire, txn).producer_epoch == 1  # a new instance
        # The replaced instance's KIP-360 bump (as librdkafka sends after timed-out messages).
        assert _init(wire, txn, pid=pid, epoch=0).error_code == ErrorCode.producer_fenced
        bump = _init(wire, txn, pid=pid, epoch=1)
        assert (bump.error_code, bump.producer_epoch) == (ErrorCode.none, 2)


def _describe(wire: KafkaWire, transactional_id: str) -> Any:
    """The state, read with strom's lenient class (kio refuses Kafka's -1 start time)."""
    correlation_id = wire.send(
        DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),))
    )
    answered, response = decode_response(
        wire.read_frame(),
        api_key=ApiKey.DESCRIBE_TRANSACTIONS,
        api_version=0,
        body_type=lenient.DescribeTransactionsResponse,
    )
    assert answered == correlation_id
    [state] = response.transaction_states
    return state


def _wait_for_state(wire: KafkaWire, transactional_id: str, state: str) -> bool:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if _describe(wire, transactional_id).transaction_state == state:
            return True
        time.sleep(0.1)
    return False


def test_a_transaction_open_across_a_kill_9_is_aborted_after_the_restart(
    start_server: StartServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    server = start_server(overrides=OVERRIDES, data_dir=data_dir)
    topic = create_topic(server.bootstrap, unique_topic("txn-restart"))
    transactional_id = unique_topic("crash")
    producer = _producer(server.bootstrap, transactional_id, **{"transaction.timeout.ms": 2000})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"before", partition=0)
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(10)
    server.stop(signal.SIGKILL)
    del producer

    restarted = start_server(overrides=OVERRIDES, data_dir=data_dir)
    with restarted.connect() as wire:
        assert _wait_for_state(wire, transactional_id, "CompleteAbort")
    after = _producer(restarted.bootstrap, transactional_id)
    after.init_transactions(10)
    after.begin_transaction()
    after.produce(topic, value=b"after", partition=0)
    after.commit_transaction(10)
    assert _values(restarted.bootstrap, topic, isolation="read_committed") == [
        b"after",
        b"before",
    ]


# --- over the wire --------------------------------------------------------------------------


def _init_request(
    transactional_id: str, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1
) -> InitProducerIdRequest:
    return InitProducerIdRequest(
        transactional_id=TransactionalId(transactional_id),
        transaction_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        producer_id=ProducerId(pid),
        producer_epoch=i16(epoch),
    )


def _init(
    wire: KafkaWire, transactional_id: str, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1
) -> Any:
    return wire.request(_init_request(transactional_id, timeout_ms, pid, epoch))


def _add_v3(wire: KafkaWire, txn: str, pid: int, epoch: int, topic: str) -> Any:
    response = wire.request(
        add_v3.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(txn),
            v3_and_below_producer_id=ProducerId(pid),
            v3_and_below_producer_epoch=i16(epoch),
            v3_and_below_topics=(
                add_v3.AddPartitionsToTxnTopic(name=TopicName(topic), partitions=(i32(0),)),
            ),
        )
    )
    [result] = response.results_by_topic_v3_and_below
    [partition] = result.results_by_partition
    return partition.partition_error_code


def _end(wire: KafkaWire, txn: str, pid: int, epoch: int, *, commit: bool) -> Any:
    return wire.request(
        EndTxnRequest(
            transactional_id=TransactionalId(txn),
            producer_id=ProducerId(pid),
            producer_epoch=i16(epoch),
            committed=commit,
        )
    ).error_code


def _produce(wire: KafkaWire, txn: str, pid: int, epoch: int, topic: str) -> Any:
    batch = records_batch(
        [b"raw"], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True
    )
    response = wire.request(produce_v3({(topic, 0): batch}, acks=-1, transactional_id=txn))
    return response.responses[0].partition_responses[0].error_code


def test_the_coordinator_over_the_wire(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn-wire"))
    txn = unique_topic("wire")
    with server.connect() as wire:
        found = wire.request(FindCoordinatorRequest(key=txn, key_type=i8(1)))
        assert found.error_code == ErrorCode.none and found.port == server.port
        assert _init(wire, "").error_code == ErrorCode.invalid_request
        assert (
            _init(wire, txn, timeout_ms=10**9).error_code == ErrorCode.invalid_transaction_timeout
        )
        init = _init(wire, txn)
        assert init.error_code == ErrorCode.none and init.producer_epoch == 0
        pid = int(init.producer_id)

        assert _end(wire, unique_topic("nobody"), pid, 0, commit=True) == (
            ErrorCode.invalid_producer_id_mapping
        )
        assert _end(wire, txn, pid, 0, commit=True) == ErrorCode.invalid_txn_state
        assert _add_v3(wire, txn, pid, 5, topic) == ErrorCode.producer_fenced
        old = wire.request(
            add_v1.AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=TransactionalId(txn),
                v3_and_below_producer_id=ProducerId(pid),
                v3_and_below_producer_epoch=i16(5),
                v3_and_below_topics=(
                    add_v1.AddPartitionsToTxnTopic(name=TopicName(topic), partitions=(i32(0),)),
                ),
            )
        )
        code = old.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        assert code == ErrorCode.invalid_producer_epoch  # v0-1 clients know no PRODUCER_FENCED
        assert _add_v3(wire, txn, pid, 0, "no-such-topic") == ErrorCode.unknown_topic_or_partition

        # KIP-890: a transactional produce to a partition outside the transaction.
        assert _produce(wire, txn, pid, 0, topic) == ErrorCode.invalid_txn_state
        assert _add_v3(wire, txn, pid, 0, topic) == ErrorCode.none
        assert _describe(wire, txn).transaction_state == "Ongoing"
        listed = wire.request(
            ListTransactionsRequest(
                state_filters=("Ongoing", "NoSuchState"),
                producer_id_filters=(ProducerId(pid),),
                duration_filter=i64(-1),
            )
        )
        assert listed.unknown_state_filters == ("NoSuchState",)
        assert [(s.transactional_id, s.producer_id) for s in listed.transaction_states] == [
            (txn, pid)
        ]
        assert _produce(wire, txn, pid, 0, topic) == ErrorCode.none
        assert _end(wire, txn, pid, 0, commit=True) == ErrorCode.none
        assert _end(wire, txn, pid, 0, commit=False) == ErrorCode.invalid_txn_state
        # The markers are written after EndTxn is answered; then the commit completes.
        deadline = time.monotonic() + 10
        described = _describe(wire, txn)
        while described.transaction_state == "PrepareCommit" and time.monotonic() < deadline:
            time.sleep(0.01)
            described = _describe(wire, txn)
        assert (described.transaction_state, described.producer_id) == ("CompleteCommit", pid)
        missing = _describe(wire, unique_topic("nobody"))
        assert missing.error_code == ErrorCode.transactional_id_not_found
        assert missing.transaction_start_time == -1
    assert _values(server.bootstrap, topic, isolation="read_committed") == [b"raw"]


def test_offsets_sent_to_a_transaction_count_only_once_it_commits(server: StromServer) -> None:
    topic = create_topic(server.bootstrap, unique_topic("txn-offsets"))
    group = unique_topic("txn-group")
    producer = _producer(server.bootstrap, unique_topic("offsets"))
    producer.init_transactions(10)
    reader = consumer(server.bootstrap, **{"group.id": group})
    try:
        metadata = reader.consumer_group_metadata()
        for offset, commit in ((5, True), (7, False)):
            producer.begin_transaction()
            producer.produce(topic, value=b"out-%d" % offset, partition=0)
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], metadata, 10)
            if commit:
                producer.commit_transaction(10)
            else:
                producer.abort_transaction(10)
        [committed] = reader.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset == 5  # the aborted 7 never counted
    finally:
        reader.close()
    assert _values(server.bootstrap, topic, isolation="read_committed") == [b"out-5"]
