"""``__transaction_state`` records as Kafka writes them, and the state table."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.coordinator.partitions import partition_for
from strom.coordinator.txn.records import (
    TransactionLogKey,
    TransactionLogValue,
    TxnPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from strom.coordinator.txn.state import TransactionState, check_transition
from strom.protocol.schema import SchemaError

VALUE = TransactionLogValue(
    producer_id=4000,
    producer_epoch=3,
    transaction_timeout_ms=60_000,
    transaction_status=1,
    transaction_partitions=(TxnPartitions("t", (0, 2)),),
    transaction_last_update_timestamp_ms=1_700_000_000_123,
    transaction_start_timestamp_ms=1_700_000_000_100,
)


def test_key_and_value_v0_bytes() -> None:
    assert encode_key(TransactionLogKey("tx")) == b"\x00\x00\x00\x02tx"
    expected = (
        struct.pack(">hqhib", 0, 4000, 3, 60_000, 1)
        + struct.pack(">ih", 1, 1)
        + b"t"
        + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_100)
    )
    assert encode_value(VALUE) == expected
    assert decode_value(expected) == VALUE
    assert decode_key(b"\x00\x00\x00\x02tx") == TransactionLogKey("tx")


def test_value_v1_is_flexible_with_tagged_fields() -> None:
    value = dataclasses.replace(VALUE, previous_producer_id=12, client_transaction_version=2)
    data = encode_value(value, version=1)
    assert data[:2] == b"\x00\x01"
    assert decode_value(data) == value
    # v0 cannot carry the tagged fields: they read back as their defaults.
    assert decode_value(encode_value(value)) == VALUE


def test_unknown_versions_and_tombstones() -> None:
    with pytest.raises(SchemaError):
        decode_key(b"\x00\x01\x00\x02tx")
    with pytest.raises(SchemaError):
        decode_value(b"\x00\x07")
    assert decode_value(None) is None


@given(
    st.builds(
        TransactionLogValue,
        producer_id=st.integers(-1, 2**63 - 1),
        producer_epoch=st.integers(-1, 2**15 - 1),
        transaction_timeout_ms=st.integers(1, 2**31 - 1),
        transaction_status=st.integers(0, 7),
        transaction_partitions=st.none()
        | st.lists(
            st.builds(
                TxnPartitions,
                topic=st.text(min_size=1, max_size=20),
                partition_ids=st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple),
            ),
            max_size=3,
        ).map(tuple),
        transaction_last_update_timestamp_ms=st.integers(-1, 2**62),
        transaction_start_timestamp_ms=st.integers(-1, 2**62),
        previous_producer_id=st.integers(-1, 2**62),
    ),
)
def test_values_round_trip_in_v1(value: TransactionLogValue) -> None:
    assert decode_value(encode_value(value, version=1)) == value


def test_partition_for_is_kafkas() -> None:
    # Java: "my-txn".hashCode() == -1061187895; Utils.abs(...) % 50 == 45
    assert partition_for("my-txn", 50) == 45


def test_state_ids_are_kafkas() -> None:
    assert [state.id for state in TransactionState] == list(range(8))
    assert [state.value for state in TransactionState] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    assert TransactionState.from_id(3) is TransactionState.PREPARE_ABORT
    assert TransactionState.parse("Ongoing") is TransactionState.ONGOING
    assert TransactionState.parse("ongoing") is None


S = TransactionState
ALLOWED = {
    (S.EMPTY, S.EMPTY),
    (S.COMPLETE_COMMIT, S.EMPTY),
    (S.COMPLETE_ABORT, S.EMPTY),
    (S.EMPTY, S.ONGOING),
    (S.ONGOING, S.ONGOING),
    (S.COMPLETE_COMMIT, S.ONGOING),
    (S.COMPLETE_ABORT, S.ONGOING),
    (S.ONGOING, S.PREPARE_COMMIT),
    (S.ONGOING, S.PREPARE_ABORT),
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
    (S.PREPARE_ABORT, S.COMPLETE_ABORT),
    (S.EMPTY, S.DEAD),
    (S.COMPLETE_COMMIT, S.DEAD),
    (S.COMPLETE_ABORT, S.DEAD),
    (S.ONGOING, S.PREPARE_EPOCH_FENCE),
}
"""Kafka's moves, written out: a prepared transaction only completes, only an Ongoing one is
prepared or fenced, only an idle one expires or starts over."""


@pytest.mark.parametrize("target", list(TransactionState))
@pytest.mark.parametrize("current", list(TransactionState))
def test_transition_table(current: TransactionState, target: TransactionState) -> None:
    if (current, target) in ALLOWED:
        check_transition(current, target)
    else:
        with pytest.raises(ValueError):
            check_transition(current, target)
