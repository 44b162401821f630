"""A transaction coordinator with an in-memory log and marker writer, for the unit tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from strom.common import ErrorCode, TopicPartition
from strom.coordinator.txn import (
    InitProducerIdResult,
    TransactionCoordinator,
    TransactionLogRecord,
    TxnSettings,
)
from strom.coordinator.txn.records import decode_key, decode_value, encode_key, encode_value

PARTITIONS = 3


@dataclass(frozen=True)
class Marker:
    tp: TopicPartition
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


@dataclass
class MemoryTxnWriter:
    """Keeps every appended record (encoded and decoded again, as the log would) and marker;
    ``fail_appends`` makes appends fail with that error."""

    records: list[tuple[int, TransactionLogRecord]] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    fail_appends: ErrorCode | None = None
    hold_markers: bool = False
    """Keep marker completions in ``held`` instead of finishing them at once."""
    held: list[Callable[[], None]] = field(default_factory=list)

    def append(
        self,
        partition: int,
        records: Sequence[TransactionLogRecord],
        done: Callable[[ErrorCode], None],
    ) -> None:
        if self.fail_appends is not None:
            done(self.fail_appends)
            return
        for record in records:
            key, value = record.encode()
            self.records.append(
                (partition, TransactionLogRecord(decode_key(key), decode_value(value)))
            )
        done(ErrorCode.none)

    def write_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Collection[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        self.markers.extend(
            Marker(tp, producer_id, producer_epoch, commit, coordinator_epoch)
            for tp in sorted(partitions)
        )
        if self.hold_markers:
            self.held.append(done)
        else:
            done()


class TxnHarness:
    """The coordinator, its writer and a clock; requests answered synchronously."""

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("abort_check_interval_ms", 1000)
        settings.setdefault("expiration_check_interval_ms", 5000)
        self.settings = TxnSettings(**settings)
        self.writer = MemoryTxnWriter()
        self.now = 1_000_000
        self._ids = itertools.count(1000)
        self.core = self._new_core()

    def _new_core(self) -> TransactionCoordinator:
        core = TransactionCoordinator(settings=self.settings, writer=self.writer)
        core.begin_loading(PARTITIONS)
        return core

    def load(self, *, coordinator_epoch: int = 0) -> None:
        for partition in range(PARTITIONS):
            self.core.finish_loading(
                partition, coordinator_epoch=coordinator_epoch, now_ms=self.now
            )

    def restart(self) -> None:
        """A new core that replays every record written so far (through the encoding)."""
        self.core = self._new_core()
        for _, record in self.writer.records:
            key, value = encode_key(record.key), None
            if record.value is not None:
                value = encode_value(record.value)
            self.core.replay(TransactionLogRecord(decode_key(key), decode_value(value)))
        self.load(coordinator_epoch=1)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.core.poll(self.now)

    def init(
        self,
        txn: str = "tx",
        *,
        timeout_ms: int = 60_000,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> InitProducerIdResult:
        answers: list[InitProducerIdResult] = []
        self.core.init_producer_id(
            txn,
            timeout_ms=timeout_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            new_producer_id=next(self._ids),
            now_ms=self.now,
            reply=answers.append,
        )
        [answer] = answers
        return answer

    def add(self, txn: str, producer_id: int, epoch: int, *partitions: TopicPartition) -> ErrorCode:
        [answer] = self.add_later(txn, producer_id, epoch, *partitions)
        return answer

    def add_later(
        self, txn: str, producer_id: int, epoch: int, *partitions: TopicPartition
    ) -> list[ErrorCode]:
        """AddPartitionsToTxn; the list its answer goes to (empty while it is held)."""
        answers: list[ErrorCode] = []
        self.core.add_partitions(
            txn,
            producer_id=producer_id,
            producer_epoch=epoch,
            partitions=partitions,
            now_ms=self.now,
            reply=answers.append,
        )
        return answers

    def end(self, txn: str, producer_id: int, epoch: int, *, commit: bool) -> ErrorCode:
        answers: list[ErrorCode] = []
        self.core.end_txn(
            txn,
            producer_id=producer_id,
            producer_epoch=epoch,
            commit=commit,
            now_ms=self.now,
            reply=answers.append,
        )
        [answer] = answers
        return answer
