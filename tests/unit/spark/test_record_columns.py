"""Fetched record batches to Arrow columns (``strom.spark.record_columns``), checked against
the protocol package's record reader on the same bytes."""

from __future__ import annotations

import datetime as dt
import io
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial.readers import read_signed_varlong
from kio.serial.writers import write_signed_varlong

from strom.common import KafkaError
from strom.protocol.batch import Compression, TimestampType
from strom.protocol.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
)
from strom.spark.record_columns import _STEP_RECORDS, RecordColumns, _varints
from strom.spark.schema import arrow_schema

MS = 1_700_000_000_123


@dataclass
class Decoded:
    batch: Any
    next_offset: int


def decode(
    records: bytes,
    *,
    first: int,
    end: int,
    aborted: list[tuple[int, int]] | None = None,
    include_headers: bool = True,
) -> Decoded:
    reader = RecordColumns("t", 3, arrow_schema(include_headers=include_headers))
    kept = reader.keep(records, first=first, aborted=aborted)
    return Decoded(reader.arrow(kept, end), kept.next_offset)


def stamp(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def rows(batch: Any) -> list[tuple[object, ...]]:
    table = batch.to_pydict()
    return list(
        zip(
            table["offset"],
            table["key"],
            table["value"],
            table["timestamp"],
            table["timestampType"],
            table["headers"],
            strict=True,
        )
    )


def expected(batches: list[bytes], first: int = 0, end: int = 2**62) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for batch in batches:
        kind = 1 if batch[22] & 0x08 else 0
        for r in iter_records(batch):
            if first <= r.offset < end:
                headers = [{"key": k, "value": v} for k, v in r.headers] or None
                out.append((r.offset, r.key, r.value, stamp(r.timestamp), kind, headers))
    return out


def some_records(count: int, base: int, seed: int) -> list[Record]:
    pick = random.Random(seed)

    def blob() -> bytes | None:
        return None if pick.random() < 0.2 else pick.randbytes(pick.choice([0, 3, 12, 13, 200]))

    return [
        Record(
            offset=base + i * 2,  # gaps, as compaction leaves them
            timestamp=MS + pick.randrange(-5, 100_000),
            key=blob(),
            value=blob(),
            headers=tuple((f"h{j}é", blob()) for j in range(pick.choice([0, 0, 1, 3]))),
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("codec", list(Compression))
def test_records_and_fields_are_the_protocol_readers(codec: Compression) -> None:
    batches = [
        build_batch(some_records(50, 0, 1), compression=codec),
        build_batch(
            some_records(40, 200, 2),
            compression=codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            max_timestamp=MS,
        ),
        build_batch(some_records(1, 400, 3)),
    ]
    decoded = decode(b"".join(batches), first=0, end=2**62)
    assert rows(decoded.batch) == expected(batches)
    assert decoded.next_offset == 401
    assert set(decoded.batch.column("topic").to_pylist()) == {"t"}
    assert set(decoded.batch.column("partition").to_pylist()) == {3}
    assert decoded.batch.schema == arrow_schema(include_headers=True)


def test_only_the_wanted_offsets_and_a_cut_batch_left_for_the_next_fetch() -> None:
    batches = [build_batch(some_records(30, 0, 4)), build_batch(some_records(30, 100, 5))]
    cut = batches[1][: len(batches[1]) - 7]
    decoded = decode(batches[0] + cut, first=9, end=41)
    assert rows(decoded.batch) == expected(batches[:1], 9, 41)
    assert decoded.next_offset == 59
    nothing = decode(cut, first=100, end=200)
    assert (nothing.batch, nothing.next_offset) == (None, 100)


def test_without_headers_the_column_is_left_out() -> None:
    batch = build_batch(some_records(10, 0, 6))
    decoded = decode(batch, first=0, end=99, include_headers=False)
    assert decoded.batch.schema == arrow_schema(include_headers=False)
    assert decoded.batch.column("value").to_pylist() == [r.value for r in iter_records(batch)]


def test_columns_of_nulls_only_or_empty_values_only() -> None:
    records = [
        Record(offset=i, timestamp=MS, key=None, value=b"", headers=(("h", None),))
        for i in range(20)
    ]
    batch = build_batch(records)
    decoded = decode(batch, first=0, end=99)
    assert rows(decoded.batch) == expected([batch])
    assert decoded.batch.column("key").null_count == 20


def marker(kind: ControlRecordType, producer: int, offset: int) -> bytes:
    return build_control_batch(
        kind, producer_id=producer, producer_epoch=0, coordinator_epoch=0,
        base_offset=offset, timestamp=MS,
    )  # fmt: skip


def test_control_batches_and_aborted_transactions_are_left_out() -> None:
    def txn(producer: int, offset: int, value: bytes) -> bytes:
        record = Record(offset=offset, timestamp=MS, key=None, value=value)
        return build_batch([record], producer_id=producer, producer_epoch=0, is_transactional=True)

    log = [
        txn(7, 0, b"c1"),
        txn(8, 1, b"a1"),
        marker(ControlRecordType.COMMIT, 7, 2),
        txn(8, 3, b"a2"),
        marker(ControlRecordType.ABORT, 8, 4),
        txn(8, 5, b"c2"),  # the same producer's next transaction, committed
        marker(ControlRecordType.COMMIT, 8, 6),
    ]
    data = b"".join(log)
    committed = decode(data, first=0, end=7, aborted=[(8, 1)])
    assert committed.batch.column("value").to_pylist() == [b"c1", b"c2"]
    assert committed.batch.column("offset").to_pylist() == [0, 5]
    uncommitted = decode(data, first=0, end=7)
    assert uncommitted.batch.column("value").to_pylist() == [b"c1", b"a1", b"a2", b"c2"]
    assert uncommitted.next_offset == 7


def test_a_record_whose_fields_overrun_its_length_is_corrupt() -> None:
    batch = bytearray(build_batch([Record(offset=0, timestamp=MS, key=None, value=b"abc")]))
    batch[61] += 2  # the record's length prefix claims one byte more
    with pytest.raises(KafkaError, match="record"):
        decode(bytes(batch) + b"\0" * 8, first=0, end=9)


@st.composite
def batch_of_runs(draw: Any, base: int) -> bytes:
    """A batch whose values come in runs of one size (as fixed-size records do, with the one-
    and two-byte offset deltas and timestamps breaking them), or sizes all different."""
    short = st.tuples(st.sampled_from([0, 1, 11, 12, 13, 62, 63, 64, 200]), st.integers(1, 40))
    long = st.tuples(st.just(9000), st.just(1))  # a three-byte length prefix
    runs = draw(st.lists(short | long, min_size=1, max_size=3))
    step = draw(st.sampled_from([0, 1, 70]))  # ms between records: deltas of 1, 2 or 3 bytes
    values = [b"v" * size for size, length in runs for _ in range(length)]
    return build_batch(
        [
            Record(offset=base + i, timestamp=MS + i * step, key=None, value=value)
            for i, value in enumerate(values)
        ]
    )


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, _STEP_RECORDS + 8))
def test_every_way_to_find_the_records_gives_the_protocol_readers(
    data: st.DataObject, count: int
) -> None:
    """Batches of one record length (found at once), of runs, and of mixed lengths, few or
    many of them (walked together, or one record at a time): the same records."""
    batches, base = [], 0
    for _ in range(count):
        batch = data.draw(batch_of_runs(base))
        batches.append(batch)
        base += len(list(iter_records(batch))) + 3
    decoded = decode(b"".join(batches), first=0, end=2**62)
    assert rows(decoded.batch) == expected(batches)


@pytest.mark.parametrize("shift", [-1, 1])
def test_a_batch_of_one_length_whose_count_is_wrong_is_corrupt(shift: int) -> None:
    records = [Record(offset=i, timestamp=MS, key=None, value=b"abc") for i in range(5)]
    batch = bytearray(build_batch(records))
    batch[57:61] = (5 + shift).to_bytes(4, "big")  # the header's record count
    with pytest.raises(KafkaError, match="record"):
        decode(bytes(batch), first=0, end=9)


def test_many_short_batches_of_mixed_lengths() -> None:
    """More batches than a numpy step costs in records: walked together, a record index per
    step (the batches of different lengths ending at different steps)."""
    batches = [
        build_batch(some_records(2 + i % 7, 100 * i, seed=i)) for i in range(3 * _STEP_RECORDS)
    ]
    decoded = decode(b"".join(batches), first=0, end=2**62)
    assert rows(decoded.batch) == expected(batches)


@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-9000, 9000), min_size=1))
def test_varints_are_kios(values: list[int]) -> None:
    """Every length of varlong, one to ten bytes, decoded at once as kio reads each."""
    out = io.BytesIO()
    positions = []
    for value in values:
        positions.append(out.tell())
        write_signed_varlong(out, value)
    data = out.getvalue()
    decoded, sizes = _varints(np.frombuffer(data, np.uint8), np.array(positions, np.int64))
    theirs = [read_signed_varlong(data, p)[0] for p in positions]
    assert decoded.tolist() == values == theirs
    assert (np.array(positions) + sizes).tolist() == [*positions[1:], len(data)]
