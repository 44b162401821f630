"""Consumed messages to Arrow batches in the source's schema (``RecordBatchBuilder``)."""

from __future__ import annotations

import datetime as dt

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
)

from strom.spark.schema import RecordBatchBuilder

MS = 1_700_000_000_123
WHEN = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)


def message(
    offset: int, kind: int, *, key: bytes | None = b"k", value: bytes | None = b"v"
) -> Message:
    return Message(
        topic="t", partition=3, offset=offset, key=key, value=value, timestamp=(kind, MS)
    )


def test_a_batch_of_create_times() -> None:
    messages = [message(7, TIMESTAMP_CREATE_TIME), message(9, TIMESTAMP_CREATE_TIME, key=None)]
    batch = RecordBatchBuilder(include_headers=False).build("t", 3, messages)
    assert batch.to_pydict() == {
        "key": [b"k", None],
        "value": [b"v", b"v"],
        "topic": ["t", "t"],
        "partition": [3, 3],
        "offset": [7, 9],
        "timestamp": [WHEN, WHEN],
        "timestampType": [0, 0],
    }


def test_mixed_and_missing_timestamps_numbered_as_spark() -> None:
    messages = [
        message(0, TIMESTAMP_LOG_APPEND_TIME),
        message(1, TIMESTAMP_NOT_AVAILABLE, value=None),
        message(2, TIMESTAMP_CREATE_TIME),
    ]
    batch = RecordBatchBuilder(include_headers=False).build("t", 3, messages)
    columns = batch.to_pydict()
    assert columns["timestamp"] == [WHEN, None, WHEN]
    assert columns["timestampType"] == [1, -1, 0]
    assert columns["value"] == [b"v", None, b"v"]


def test_headers_when_asked() -> None:
    with_headers = Message(
        topic="t", partition=0, offset=0, value=b"v", headers=[("h", b"1"), ("n", None)],
        timestamp=(TIMESTAMP_CREATE_TIME, MS),
    )  # fmt: skip
    plain = message(1, TIMESTAMP_CREATE_TIME)
    batch = RecordBatchBuilder(include_headers=True).build("t", 0, [with_headers, plain])
    assert batch.to_pydict()["headers"] == [
        [{"key": "h", "value": b"1"}, {"key": "n", "value": None}],
        None,
    ]
