"""Per-record validation on append: keys on compacted topics, broker-side recompression."""

from __future__ import annotations

import pytest

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import BatchHeader, Compression, rewrite_crc
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.log_config import LogConfig
from strom.storage.log_validator import RecordValidationError, validate_records

from .batches import make_batch
from .conftest import OpenLog

COMPACT = frozenset({"compact"})


def records(*keys: bytes | None, codec: Compression = Compression.NONE) -> bytes:
    return build_batch(
        [Record(i, 1_000 + i, key, b"value-%d" % i) for i, key in enumerate(keys)],
        compression=codec,
        producer_id=7,
        producer_epoch=2,
        base_sequence=11,
    )


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
def test_compacted_topics_refuse_keyless_records(codec: Compression) -> None:
    with pytest.raises(RecordValidationError) as caught:
        validate_records(
            bytearray(records(b"a", None, b"c", None, codec=codec)),
            config=LogConfig(cleanup_policy=COMPACT),
            partition="users-3",
        )
    error = caught.value
    message = "Compacted topic cannot accept message without key in topic partition users-3."
    assert error.error_code == ErrorCode.invalid_record
    assert error.record_errors == ((1, message), (3, message))
    assert error.message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{message}'),"
        f" RecordError(batchIndex=3, message='{message}')]"
    )


def test_keyed_records_pass_unchanged() -> None:
    data = bytearray(records(b"a", b"b", codec=Compression.GZIP))
    config = LogConfig(cleanup_policy=COMPACT)
    assert validate_records(data, config=config, partition="t-0") is data


@pytest.mark.parametrize("source", [Compression.NONE, Compression.GZIP, Compression.SNAPPY])
@pytest.mark.parametrize("target", [Compression.ZSTD, Compression.NONE, Compression.LZ4])
def test_batches_are_recompressed_with_the_topic_codec(
    source: Compression, target: Compression
) -> None:
    original = records(b"a", None, b"c", codec=source)
    out = validate_records(
        bytearray(original), config=LogConfig(compression=target), partition="t-0"
    )
    before, after = BatchHeader.read(original), BatchHeader.read(out)
    assert after.compression == target
    assert (out == original) == (source == target)
    assert list(iter_records(out)) == list(iter_records(original))
    for name in (
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "last_offset_delta",
        "max_timestamp",
        "base_timestamp",
        "record_count",
        "timestamp_type",
    ):
        assert getattr(after, name) == getattr(before, name), name


def test_control_batches_are_not_recompressed(open_log: OpenLog) -> None:
    control = bytearray(records(b"a"))
    control[22] |= 0x20  # the control flag
    rewrite_crc(control, 0)
    config = LogConfig(compression=Compression.ZSTD)
    assert validate_records(control, config=config, partition="t-0") is control
    log = open_log(config)
    with pytest.raises(KafkaError) as caught:  # still a control batch: clients may not send it
        log.append(bytes(control))
    assert caught.value.error_code == ErrorCode.invalid_record
    assert log.log_end_offset == 0


def test_partition_log_stores_the_topic_codec(open_log: OpenLog) -> None:
    log = open_log(LogConfig(compression=Compression.ZSTD))
    first = log.append(make_batch(3))
    second = log.append(records(b"x", codec=Compression.GZIP))
    stored = log.read_bytes(0, max_bytes=1 << 20)
    headers = [BatchHeader.read(stored), BatchHeader.read(stored, first.size)]
    assert [h.compression for h in headers] == [Compression.ZSTD, Compression.ZSTD]
    assert [h.base_offset for h in headers] == [0, second.base_offset] == [0, 3]
    assert [r.offset for r in iter_records(stored[first.size :])] == [3]


def test_partition_log_refuses_keyless_records_on_compacted_topics(open_log: OpenLog) -> None:
    log = open_log(LogConfig(cleanup_policy=frozenset({"compact", "delete"})))
    with pytest.raises(RecordValidationError):
        log.append(make_batch(2))
    assert log.log_end_offset == 0
    log.append(make_batch(2, keys=[b"a", b"b"]))
    assert log.log_end_offset == 2
