"""The states of a transactional id and the transitions between them (Kafka's
``TransactionState``).

A transaction moves only along :data:`VALID_PREVIOUS_STATES`; :func:`check_transition` refuses
anything else. ``id`` is the byte ``__transaction_state`` stores, ``value`` the name that
DescribeTransactions and ListTransactions give.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["VALID_PREVIOUS_STATES", "TransactionState", "check_transition"]


class TransactionState(enum.Enum):
    """The value is Kafka's state name; :attr:`id` is its byte in the log."""

    EMPTY = "Empty"
    """The producer id and epoch are assigned, no transaction is open. AddPartitionsToTxn or
    AddOffsetsToTxn -> Ongoing; InitProducerId bumps the epoch and stays Empty; EndTxn is
    INVALID_TXN_STATE; an idle id expires after ``transactional.id.expiration.ms`` -> Dead."""

    ONGOING = "Ongoing"
    """A transaction is open on the partitions the producer added. More partitions keep it
    Ongoing; EndTxn -> PrepareCommit or PrepareAbort; a transaction older than its timeout,
    or an InitProducerId of a new producer instance, fences the producer (-> PrepareEpochFence)
    and aborts it."""

    PREPARE_COMMIT = "PrepareCommit"
    """The commit decision is written; COMMIT markers go to every partition, then
    CompleteCommit. Requests meanwhile answer CONCURRENT_TRANSACTIONS (a retried commit) or
    INVALID_TXN_STATE (an abort)."""

    PREPARE_ABORT = "PrepareAbort"
    """The abort decision is written; ABORT markers go to every partition, then
    CompleteAbort. Requests meanwhile answer as in PrepareCommit."""

    COMPLETE_COMMIT = "CompleteCommit"
    """The markers are written; the transactional id is ready for its next transaction (as
    Empty). A retried commit answers NONE, an abort INVALID_TXN_STATE."""

    COMPLETE_ABORT = "CompleteAbort"
    """As CompleteCommit, for an abort."""

    DEAD = "Dead"
    """The transactional id expired: its tombstone is being written, then it is forgotten."""

    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    """In memory only: an Ongoing transaction is being aborted by the coordinator (timeout, or
    a new producer instance) with a bumped epoch, so that its old producer is fenced. Its
    record is the PrepareAbort that follows at once."""

    @property
    def id(self) -> int:
        """The state byte of ``TransactionLogValue``."""
        return _IDS[self]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state, known in _IDS.items():
            if known == state_id:
                return state
        raise ValueError(f"unknown transaction state byte {state_id}")

    @classmethod
    def parse(cls, name: str) -> TransactionState | None:
        """The state of a ListTransactions filter entry (exact name, as Kafka), or None."""
        for state in cls:
            if state.value == name:
                return state
        return None


_IDS: Final[Mapping[TransactionState, int]] = MappingProxyType(
    {state: index for index, state in enumerate(TransactionState)}
)

VALID_PREVIOUS_STATES: Final[Mapping[TransactionState, frozenset[TransactionState]]] = (
    MappingProxyType(
        {
            TransactionState.EMPTY: frozenset(
                {
                    TransactionState.EMPTY,
                    TransactionState.COMPLETE_COMMIT,
                    TransactionState.COMPLETE_ABORT,
                }
            ),
            TransactionState.ONGOING: frozenset(
                {
                    TransactionState.ONGOING,
                    TransactionState.EMPTY,
                    TransactionState.COMPLETE_COMMIT,
                    TransactionState.COMPLETE_ABORT,
                }
            ),
            TransactionState.PREPARE_COMMIT: frozenset({TransactionState.ONGOING}),
            TransactionState.PREPARE_ABORT: frozenset(
                {TransactionState.ONGOING, TransactionState.PREPARE_EPOCH_FENCE}
            ),
            TransactionState.COMPLETE_COMMIT: frozenset({TransactionState.PREPARE_COMMIT}),
            TransactionState.COMPLETE_ABORT: frozenset({TransactionState.PREPARE_ABORT}),
            TransactionState.DEAD: frozenset(
                {
                    TransactionState.EMPTY,
                    TransactionState.COMPLETE_COMMIT,
                    TransactionState.COMPLETE_ABORT,
                }
            ),
            TransactionState.PREPARE_EPOCH_FENCE: frozenset({TransactionState.ONGOING}),
        }
    )
)
"""state -> the states a transaction may enter it from."""


def check_transition(current: TransactionState, target: TransactionState) -> None:
    """Raise ValueError unless a transaction in ``current`` may move to ``target``."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise ValueError(f"a transaction cannot move from {current.value} to {target.value}")
