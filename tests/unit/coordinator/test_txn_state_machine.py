"""A hypothesis state machine: random InitProducerId, AddPartitionsToTxn and EndTxn calls (with
current and stale epochs), time passing and restarts, against a small model of what Kafka's
coordinator answers and which markers it writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from txn_harness import TxnHarness

from strom.common import ErrorCode, TopicPartition
from strom.coordinator.txn import TransactionState

S = TransactionState
TIMEOUT_MS = 5000
IDS = st.sampled_from(["a", "b"])
PARTITIONS = st.sets(
    st.builds(TopicPartition, st.sampled_from(["x", "y"]), st.integers(0, 1)),
    min_size=1,
    max_size=3,
)


@dataclass
class ModelTxn:
    producer_id: int
    epoch: int = 0
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_end: bool | None = None
    """How the last transaction ended (True: commit) while the id is Complete*, else None."""


class TxnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = TxnHarness(abort_check_interval_ms=1, max_timeout_ms=TIMEOUT_MS)
        self.h.load()
        self.model: dict[str, ModelTxn] = {}
        self.markers: list[tuple[TopicPartition, int, int, bool]] = []

    def _end(self, txn: ModelTxn, *, commit: bool) -> None:
        self.markers += [(tp, txn.producer_id, txn.epoch, commit) for tp in sorted(txn.partitions)]
        txn.partitions = set()
        txn.last_end = commit

    @rule(name=IDS)
    def init(self, name: str) -> None:
        answer = self.h.init(name, timeout_ms=TIMEOUT_MS)
        txn = self.model.get(name)
        if txn is None:
            assert answer.error is ErrorCode.none and answer.producer_epoch == 0
            self.model[name] = ModelTxn(answer.producer_id)
        elif txn.partitions:
            assert answer.error is ErrorCode.concurrent_transactions
            txn.epoch += 1
            self._end(txn, commit=False)
        else:
            assert (answer.error, answer.producer_id) == (ErrorCode.none, txn.producer_id)
            assert answer.producer_epoch == txn.epoch + 1
            txn.epoch += 1
            txn.last_end = None

    @rule(name=IDS, partitions=PARTITIONS, stale=st.booleans())
    def add(self, name: str, partitions: set[TopicPartition], stale: bool) -> None:
        txn = self.model.get(name)
        if txn is None:
            assert self.h.add(name, 77, 0, *partitions) is ErrorCode.invalid_producer_id_mapping
            return
        epoch = txn.epoch + 1 if stale else txn.epoch
        code = self.h.add(name, txn.producer_id, epoch, *partitions)
        if stale:
            assert code is ErrorCode.producer_fenced
            return
        assert code is ErrorCode.none
        if not txn.partitions:
            txn.start_ms = self.h.now
        txn.partitions |= partitions
        txn.last_end = None

    @rule(name=IDS, commit=st.booleans(), stale=st.booleans())
    def end(self, name: str, commit: bool, stale: bool) -> None:
        txn = self.model.get(name)
        if txn is None:
            return
        epoch = txn.epoch + 1 if stale else txn.epoch
        code = self.h.end(name, txn.producer_id, epoch, commit=commit)
        if stale:
            assert code is ErrorCode.producer_fenced
        elif txn.partitions:
            assert code is ErrorCode.none
            self._end(txn, commit=commit)
        elif txn.last_end is commit:
            assert code is ErrorCode.none
        else:
            assert code is ErrorCode.invalid_txn_state

    @rule(ms=st.integers(1, 4000))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        for txn in self.model.values():
            if txn.partitions and txn.start_ms + TIMEOUT_MS < self.h.now:
                txn.epoch += 1
                self._end(txn, commit=False)

    @rule()
    def restart(self) -> None:
        self.h.restart()

    @invariant()
    def matches_the_model(self) -> None:
        for name, txn in self.model.items():
            metadata = self.h.core.transactions[name]
            assert (metadata.producer_id, metadata.producer_epoch) == (txn.producer_id, txn.epoch)
            assert metadata.partitions == txn.partitions
            assert metadata.pending is None
            if txn.partitions:
                assert metadata.state is S.ONGOING
            else:
                expected = {None: S.EMPTY, True: S.COMPLETE_COMMIT, False: S.COMPLETE_ABORT}
                assert metadata.state is expected[txn.last_end]
        written = [(m.tp, m.producer_id, m.producer_epoch, m.commit) for m in self.h.writer.markers]
        assert written == self.markers


TestTxnMachine = TxnMachine.TestCase
TestTxnMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
