"""Confluent's wire format: framing and Protobuf message indexes round-trip (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.registry.wire import frame, message_indexes, read_message_indexes, unframe


@given(st.integers(0, 2**32 - 1), st.binary(max_size=64))
def test_frame_round_trips(schema_id: int, payload: bytes) -> None:
    framed = frame(schema_id, payload)
    assert framed[0] == 0 and len(framed) == 5 + len(payload)
    got_id, got_payload = unframe(framed)
    assert (got_id, bytes(got_payload)) == (schema_id, payload)


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=5), st.binary(max_size=16))
def test_message_indexes_round_trip(indexes: list[int], body: bytes) -> None:
    encoded = memoryview(message_indexes(indexes) + body)
    got, rest = read_message_indexes(encoded)
    assert (got, bytes(rest)) == (indexes, body)


def test_first_message_is_one_zero_byte() -> None:
    assert message_indexes([0]) == b"\x00"
    assert message_indexes([1]) == b"\x02\x02"  # count 1, index 1, both zigzag


@pytest.mark.parametrize("value", [b"", b"\x01\x00\x00\x00\x01", b"\x00\x00"])
def test_unframed_values_are_refused(value: bytes) -> None:
    with pytest.raises(ValueError, match="magic byte"):
        unframe(value)
