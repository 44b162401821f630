"""Client workloads for chaos runs: real confluent-kafka (librdkafka) clients in threads, each
recording what it did and saw into a :class:`~strom.testing.chaos.history.Recorder`.

- :class:`QueueWorkload`: idempotent acks=all producers write unique values to every partition;
  a consumer group reads them back (with ``commits``, committing as it goes through rebalances).
- :class:`BankWorkload`: a consume-transform-produce bank. Transfer orders go to one topic;
  transactional workers turn each into a debit and a credit on a ledger topic, in one
  transaction with the order's offset (read_committed), so money is neither created nor lost.

Every workload ends with :meth:`Workload.final_read`: a fresh read_committed consumer reads each
of its topics from the start to the end offsets the cluster reports, which the checker compares
every acknowledged write with.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from strom.testing.chaos.history import EventType, Recorder

__all__ = ["CLIENT_LOG", "BankWorkload", "QueueWorkload", "Workload", "final_read"]

CLIENT_LOG = logging.getLogger("strom.testing.chaos.clients")
CLIENT_LOG.addHandler(logging.NullHandler())
"""librdkafka's own log lines (a fault makes many): kept out of the run's output unless the
application configures logging."""

_CLIENT_TIMEOUTS: Final[dict[str, Any]] = {
    "logger": CLIENT_LOG,
    # Short enough that a fault shows up in the history within seconds, long enough that a
    # leader election (a few seconds here) does not fail every in-flight request.
    "socket.timeout.ms": 10_000,
    "session.timeout.ms": 6_000,
    "heartbeat.interval.ms": 1_000,
}


class Workload(Protocol):
    @property
    def topics(self) -> tuple[str, ...]:
        """What :func:`final_read` reads back."""
        ...

    def start(self, bootstrap_servers: str, recorder: Recorder) -> None: ...

    def stop(self) -> None:
        """Stop every client, waiting for outstanding acknowledgements (bounded)."""
        ...


def _value(message: Message) -> str:
    return (message.value() or b"").decode()


def _position(message: Message) -> tuple[str, int, int]:
    """Topic, partition and offset of a message the client delivered (never None there)."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    assert topic is not None and partition is not None and offset is not None
    return topic, partition, offset


def _records(messages: list[Message]) -> list[list[Any]]:
    return [[*_position(m), _value(m)] for m in messages]


def _error_text(error: object) -> str:
    return str(error.str() if isinstance(error, KafkaError) else error)


@dataclass
class _Threads:
    """Named worker threads and the event that stops them."""

    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.1))


class _SendLog:
    """One producer's sends in flight: records each ``send``'s completion from librdkafka's
    delivery report, and what never completed as unknown."""

    def __init__(self, recorder: Recorder, process: str) -> None:
        self.recorder = recorder
        self.process = process
        self._pending: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def invoked(self, topic: str, partition: int | None, value: str) -> None:
        sent = {"topic": topic, "partition": partition, "value": value}
        with self._lock:
            self._pending[value] = sent
        self.recorder.record(self.process, "invoke", "send", sent)

    def not_sent(self, value: str, error: str) -> None:
        """The client refused it (its queue is full, or it is unusable): nothing was sent."""
        with self._lock:
            sent = self._pending.pop(value)
        self.recorder.record(self.process, "fail", "send", sent, error=error)

    def delivered(self, error: KafkaError | None, message: Message) -> None:
        value = _value(message)
        with self._lock:
            sent = self._pending.pop(value, None)
        if sent is None:
            return
        if error is None:
            acked = {**sent, "partition": message.partition(), "offset": message.offset()}
            self.recorder.record(self.process, "ok", "send", acked)
        else:
            # A timed-out or failed delivery may still have been written: unknown, not failed.
            self.recorder.record(self.process, "info", "send", sent, error=_error_text(error))

    def abandon(self) -> None:
        """Sends still unanswered when the producer is dropped: unknown."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for sent in pending.values():
            self.recorder.record(self.process, "info", "send", sent, error="no answer in time")


def _producer_loop(
    *,
    bootstrap_servers: str,
    recorder: Recorder,
    process: str,
    stopping: threading.Event,
    rate: float,
    next_send: Callable[[int], tuple[str, int | None, str]],
) -> None:
    """Idempotent acks=all sends at ``rate`` per second until stopped; a producer that hits a
    fatal error is replaced, as an application would."""
    sends = _SendLog(recorder, process)
    fatal = threading.Event()
    settings = {
        "bootstrap.servers": bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 20_000,
        "error_cb": lambda error: fatal.set() if error.fatal() else None,
        "socket.timeout.ms": _CLIENT_TIMEOUTS["socket.timeout.ms"],
        "logger": CLIENT_LOG,
    }
    producer = Producer(settings)
    number = 0
    interval = 1.0 / rate
    while not stopping.is_set():
        if fatal.is_set():
            producer.flush(5)
            sends.abandon()
            fatal.clear()
            producer = Producer(settings)
        topic, partition, value = next_send(number)
        number += 1
        sends.invoked(topic, partition, value)
        try:
            producer.produce(
                topic,
                value.encode(),
                partition=-1 if partition is None else partition,
                on_delivery=sends.delivered,
            )
        except (BufferError, KafkaException) as error:
            sends.not_sent(value, _error_text(error))
        producer.poll(0)
        stopping.wait(interval)
    producer.flush(25)
    sends.abandon()


class _Consumers:
    """Group consumers that record their assignments, their polls and (optionally) their
    commits."""

    def __init__(self, recorder: Recorder, group: str, topics: list[str], commits: bool) -> None:
        self.recorder = recorder
        self.group = group
        self.topics = topics
        self.commits = commits

    def run(self, bootstrap_servers: str, process: str, done: Callable[[], bool]) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                **_CLIENT_TIMEOUTS,
            }
        )

        def assigned(_: Consumer, partitions: list[KafkaPartition]) -> None:
            value = {"partitions": [[p.topic, p.partition] for p in partitions]}
            self.recorder.record(process, "ok", "assign", value)

        consumer.subscribe(self.topics, on_assign=assigned)
        try:
            while not done():
                messages = [m for m in consumer.consume(200, timeout=0.5) if m.error() is None]
                if not messages:
                    continue
                self.recorder.record(process, "ok", "poll", {"records": _records(messages)})
                if self.commits:
                    self._commit(consumer, process, messages)
        finally:
            consumer.close()

    def _commit(self, consumer: Consumer, process: str, messages: list[Message]) -> None:
        last: dict[tuple[str, int], int] = {}
        for message in messages:
            topic, partition, offset = _position(message)
            last[(topic, partition)] = offset + 1
        positions = [KafkaPartition(t, p, o) for (t, p), o in last.items()]
        offsets = [[t, p, o] for (t, p), o in last.items()]
        value = {"group": self.group, "offsets": offsets}
        self.recorder.record(process, "invoke", "commit", value)
        try:
            consumer.commit(offsets=positions, asynchronous=False)
        except KafkaException as error:
            # A rebalance in between (ILLEGAL_GENERATION, ...) refuses the commit; a lost
            # connection leaves it unknown.
            kafka_error = error.args[0]
            known = isinstance(kafka_error, KafkaError) and not kafka_error.retriable()
            outcome: EventType = "fail" if known else "info"
            self.recorder.record(process, outcome, "commit", value, error=_error_text(kafka_error))
        else:
            self.recorder.record(process, "ok", "commit", value)


@dataclass
class QueueWorkload:
    """Unique values from ``producers`` idempotent producers, round-robin over the partitions
    of ``topic``; ``consumers`` in one group read them (``commits``: and commit, one consumer
    leaving and rejoining every ``churn`` seconds when set, to force rebalances)."""

    topic: str
    partitions: int = 3
    producers: int = 2
    consumers: int = 2
    rate: float = 100.0
    """Sends per second per producer."""
    commits: bool = False
    churn: float | None = None
    _threads: _Threads = field(default_factory=_Threads, init=False, repr=False)

    @property
    def topics(self) -> tuple[str, ...]:
        return (self.topic,)

    @property
    def group(self) -> str:
        return f"{self.topic}-readers"

    def start(self, bootstrap_servers: str, recorder: Recorder) -> None:
        for index in range(self.producers):
            self._threads.spawn(
                f"producer-{index}", self._producer(bootstrap_servers, recorder, index)
            )
        readers = _Consumers(recorder, self.group, [self.topic], self.commits)
        for index in range(self.consumers):
            self._threads.spawn(
                f"consumer-{index}", self._consumer(bootstrap_servers, readers, index)
            )

    def _producer(
        self, bootstrap_servers: str, recorder: Recorder, index: int
    ) -> Callable[[], None]:
        process = f"producer-{index}"

        def next_send(number: int) -> tuple[str, int | None, str]:
            return self.topic, number % self.partitions, f"{process}-{number}"

        return lambda: _producer_loop(
            bootstrap_servers=bootstrap_servers,
            recorder=recorder,
            process=process,
            stopping=self._threads.stopping,
            rate=self.rate,
            next_send=next_send,
        )

    def _consumer(
        self, bootstrap_servers: str, readers: _Consumers, index: int
    ) -> Callable[[], None]:
        stopping = self._threads.stopping
        churn = self.churn

        def run() -> None:
            if churn is None or index != 0:
                readers.run(bootstrap_servers, f"consumer-{index}", stopping.is_set)
                return
            generation = 0
            while not stopping.is_set():
                leave_at = time.monotonic() + churn
                readers.run(
                    bootstrap_servers,
                    f"consumer-{index}.{generation}",
                    lambda at=leave_at: stopping.is_set() or time.monotonic() > at,  # type: ignore[misc]
                )
                generation += 1

        return run

    def stop(self) -> None:
        self._threads.stop(timeout=40)


@dataclass
class BankWorkload:
    """Transfers between ``accounts`` accounts: orders ``"<id>:<from>:<to>:<amount>"`` on
    ``<prefix>-orders``, applied by ``workers`` transactional workers as two legs
    ``"<id>:<account>:<delta>"`` on ``<prefix>-ledger``; a read_committed reader polls the
    ledger meanwhile. A worker aborts ``abort_ratio`` of its transactions on purpose (and
    applies their orders again), so that aborted records are always there to be wrongly read."""

    prefix: str
    partitions: int = 3
    workers: int = 2
    accounts: int = 8
    rate: float = 50.0
    """Orders per second."""
    seed: int = 0
    abort_ratio: float = 0.1
    _threads: _Threads = field(default_factory=_Threads, init=False, repr=False)

    @property
    def orders(self) -> str:
        return f"{self.prefix}-orders"

    @property
    def ledger(self) -> str:
        return f"{self.prefix}-ledger"

    @property
    def topics(self) -> tuple[str, ...]:
        return (self.orders, self.ledger)

    def start(self, bootstrap_servers: str, recorder: Recorder) -> None:
        rng = random.Random(self.seed)

        def next_order(number: int) -> tuple[str, int | None, str]:
            source, target = rng.sample(range(self.accounts), 2)
            amount = rng.randint(1, 100)
            return self.orders, number % self.partitions, f"{number}:a{source}:a{target}:{amount}"

        stopping = self._threads.stopping
        self._threads.spawn(
            "orders",
            lambda: _producer_loop(
                bootstrap_servers=bootstrap_servers,
                recorder=recorder,
                process="orders",
                stopping=stopping,
                rate=self.rate,
                next_send=next_order,
            ),
        )
        for index in range(self.workers):
            worker = _BankWorker(self, bootstrap_servers, recorder, f"worker-{index}")
            self._threads.spawn(worker.process, lambda w=worker: w.run(stopping))  # type: ignore[misc]
        reader = _Consumers(recorder, f"{self.prefix}-auditors", [self.ledger], commits=False)
        self._threads.spawn(
            "auditor", lambda: reader.run(bootstrap_servers, "auditor", stopping.is_set)
        )

    def stop(self) -> None:
        self._threads.stop(timeout=60)


_ORDERS_PER_TXN: Final = 20


class _BankWorker:
    """Applies up to ``_ORDERS_PER_TXN`` orders per transaction: their legs and the orders'
    offsets commit together."""

    def __init__(
        self, bank: BankWorkload, bootstrap_servers: str, recorder: Recorder, process: str
    ) -> None:
        self.bank = bank
        self.recorder = recorder
        self.process = process
        self.bootstrap_servers = bootstrap_servers
        self.rng = random.Random(f"{bank.seed}-{process}")

    def _clients(self) -> tuple[Consumer, Producer]:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"{self.bank.prefix}-workers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                **_CLIENT_TIMEOUTS,
            }
        )
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "transactional.id": f"{self.bank.prefix}-{self.process}",
                "transaction.timeout.ms": 15_000,
                "linger.ms": 2,
                "socket.timeout.ms": _CLIENT_TIMEOUTS["socket.timeout.ms"],
                "logger": CLIENT_LOG,
            }
        )
        producer.init_transactions(60)
        consumer.subscribe([self.bank.orders])
        return consumer, producer

    def run(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            try:
                consumer, producer = self._clients()
            except KafkaException:
                stopping.wait(1.0)  # no coordinator yet: try again
                continue
            try:
                self._apply_orders(consumer, producer, stopping)
            except _Stuck:
                continue  # the stuck clients are left to their thread; new ones take over
            with contextlib.suppress(KafkaException):  # a fenced producer refuses even this
                consumer.close()
                producer.flush(5)

    def _apply_orders(
        self, consumer: Consumer, producer: Producer, stopping: threading.Event
    ) -> None:
        while not stopping.is_set():
            orders = [m for m in consumer.consume(_ORDERS_PER_TXN, 0.5) if m.error() is None]
            if orders and not self._transfer(consumer, producer, orders):
                return  # clients unusable (fenced, fatal): start over with new ones

    def _transfer(self, consumer: Consumer, producer: Producer, orders: list[Message]) -> bool:
        """One transaction applying ``orders``; False when the clients must be replaced."""
        transfers, legs = [], []
        for order in orders:
            transfer_id, source, target, amount = _value(order).split(":")
            transfers.append(
                {"id": int(transfer_id), "from": source, "to": target, "amount": int(amount)}
            )
            legs += [
                (source, f"{transfer_id}:{source}:-{amount}"),
                (target, f"{transfer_id}:{target}:{amount}"),
            ]
        value = {
            "transfers": transfers,
            "writes": [[self.bank.ledger, None, leg] for _, leg in legs],
        }
        positions: dict[tuple[str, int], int] = {}
        for order in orders:
            topic, partition, offset = _position(order)
            positions[(topic, partition)] = offset + 1
        self.recorder.record(self.process, "invoke", "txn", value)
        try:
            producer.begin_transaction()
            for account, leg in legs:
                producer.produce(self.bank.ledger, leg.encode(), key=account.encode())
            offsets = [KafkaPartition(t, p, o) for (t, p), o in positions.items()]
            metadata = consumer.consumer_group_metadata()
            if not _returns_within(
                lambda: producer.send_offsets_to_transaction(offsets, metadata, 20), 30
            ):
                # librdkafka#5456: the call can outlive its timeout when the group coordinator
                # it cached is gone. Its outcome is unknown; the transactional id is fenced by
                # the next clients' init_transactions.
                self.recorder.record(
                    self.process, "info", "txn", value, error="send_offsets_to_transaction hung"
                )
                raise _Stuck
            if self.rng.random() < self.bank.abort_ratio:
                producer.abort_transaction(20)
                self.recorder.record(self.process, "fail", "txn", value, error="aborted on purpose")
                _rewind(consumer)
                return True
            producer.commit_transaction(20)
        except KafkaException as error:
            return self._after_error(consumer, producer, value, error.args[0])
        self.recorder.record(self.process, "ok", "txn", value)
        return True

    def _after_error(
        self, consumer: Consumer, producer: Producer, value: dict[str, Any], error: KafkaError
    ) -> bool:
        if error.txn_requires_abort():
            try:
                producer.abort_transaction(20)
            except KafkaException as abort_error:
                self.recorder.record(
                    self.process, "info", "txn", value, error=_error_text(abort_error.args[0])
                )
                return False
            self.recorder.record(self.process, "fail", "txn", value, error=_error_text(error))
            _rewind(consumer)
            return True
        # Fatal (fenced), or a commit whose outcome is unknown: the order is re-read by whoever
        # owns its partition next, from the group's committed offset.
        self.recorder.record(self.process, "info", "txn", value, error=_error_text(error))
        return False


class _Stuck(Exception):
    """A client call did not return in time; its clients are abandoned."""


def _returns_within(call: Callable[[], object], seconds: float) -> bool:
    """Run ``call`` in a thread of its own; False if it has not returned after ``seconds`` (it
    is left running). Its exception, if any, is raised here."""
    done = threading.Event()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:
            raised.append(error)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="bounded-client-call").start()
    if not done.wait(seconds):
        return False
    if raised:
        raise raised[0]
    return True


def _rewind(consumer: Consumer) -> None:
    """Back to the committed offsets, so an aborted transaction's orders are applied again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for position in consumer.committed(assignment, timeout=10):
        offset = position.offset if position.offset >= 0 else 0
        consumer.seek(KafkaPartition(position.topic, position.partition, offset))


def _partitions(consumer: Consumer, topics: tuple[str, ...]) -> Iterator[KafkaPartition]:
    for topic in topics:
        described = consumer.list_topics(topic, timeout=10).topics[topic]
        for partition in described.partitions:
            yield KafkaPartition(topic, partition)


def final_read(
    bootstrap_servers: str, topics: tuple[str, ...], recorder: Recorder, *, timeout: float = 60
) -> bool:
    """Read every partition of ``topics`` from the start to its end offset (read_committed),
    recording one ``final-read``; True when every partition was read to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "strom-chaos-final-read",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            **_CLIENT_TIMEOUTS,
        }
    )
    deadline = time.monotonic() + timeout
    records: list[list[Any]] = []
    try:
        partitions = list(_partitions(consumer, topics))
        ends = {(p.topic, p.partition): _end_offset(consumer, p, deadline) for p in partitions}
        consumer.assign([KafkaPartition(p.topic, p.partition, 0) for p in partitions])
        unread = {key for key, end in ends.items() if end > 0}
        while unread and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                topic, partition, offset = _position(message)
                error = message.error()
                if error is None:
                    records.append([topic, partition, offset, _value(message)])
                elif error.code() == KafkaError._PARTITION_EOF and offset >= ends[topic, partition]:
                    unread.discard((topic, partition))
    finally:
        consumer.close()
    complete = not unread
    recorder.record("final-reader", "ok", "final-read", {"records": records, "complete": complete})
    return complete


def _end_offset(consumer: Consumer, partition: KafkaPartition, deadline: float) -> int:
    while True:
        try:
            _, high = consumer.get_watermark_offsets(partition, timeout=5)
            return int(high)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
