"""The replica manager: partition errors, batch checks, high watermark, reads and offsets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from data_path_harness import NODE_ID, DataPath, batch, recrc, registration

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.protocol.batch import Compression
from strom.protocol.records import ControlRecordType, build_control_batch, iter_records
from strom.server.replica.replica_manager import (
    READ_COMMITTED,
    READ_LOG_END,
    READ_UNCOMMITTED,
    HighWatermarkUpdate,
    fetch_isolation,
)
from strom.storage.fetch_isolation import FetchIsolation
from strom.storage.log_config import LogConfig

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    yield path
    path.close()


def append(data: DataPath, tp: TopicPartition, records: bytes | None, acks: int = 1) -> object:
    [(_, result)] = data.replica_manager.append_to_local_log([(tp, records)], required_acks=acks)
    return result


def test_append_assigns_offsets_and_advances_the_high_watermark(data: DataPath) -> None:
    data.create({"orders": 2})
    results = data.replica_manager.append_to_local_log(
        [(T0, batch(3)), (T1, batch(1)), (T0, batch(2))], required_acks=1
    )
    assert [(tp, r.error, r.base_offset, r.last_offset) for tp, r in results] == [
        (T0, ErrorCode.none, 0, 2),
        (T1, ErrorCode.none, 0, 0),
        (T0, ErrorCode.none, 3, 4),
    ]
    assert all(r.log_start_offset == 0 and r.log_append_time == -1 for _, r in results)
    partition = data.replica_manager.partition(T0)
    assert partition.log.high_watermark == partition.log_end_offset == 5
    sizes = [len(batch(3)), len(batch(2))]
    assert [(tp, u.old, u.new, u.size) for tp, u in data.updates if tp == T0 and u] == [
        (T0, 0, 3, sizes[0]),
        (T0, 3, 5, sizes[1]),
    ]


def test_log_append_time(data: DataPath) -> None:
    data.create({"orders": 1}, log_config=LogConfig(message_timestamp_type="LogAppendTime"))
    result = append(data, T0, batch(1))
    assert result.log_append_time == data.clock.now_ms()  # type: ignore[attr-defined]


def test_missing_partitions(data: DataPath) -> None:
    data.create({"orders": 1, "elsewhere": {0: registration(leader=2, isr=(2,))}})
    data.create(
        {"orders": 1, "elsewhere": {0: registration(leader=2, isr=(2,))}, "unopened": 1},
        open_logs=False,
    )
    results = data.replica_manager.append_to_local_log(
        [
            (TopicPartition("orders", 7), batch()),
            (TopicPartition("nope", 0), batch()),
            (TopicPartition("elsewhere", 0), batch()),
            (TopicPartition("unopened", 0), batch()),
            (T0, batch()),
        ],
        required_acks=1,
    )
    assert [r.error for _, r in results] == [
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_leader_or_follower,
        ErrorCode.not_leader_or_follower,
        ErrorCode.none,
    ]
    assert all(r.message for _, r in results[:4])


def corrupt_crc() -> bytes:
    data = bytearray(batch(2))
    data[-1] ^= 0xFF
    return bytes(data)


def unknown_codec() -> bytes:
    data = bytearray(batch(1))
    data[22] = (data[22] & ~0x07) | 0x05
    return recrc(data)


@pytest.mark.parametrize(
    ("records", "error"),
    [
        (corrupt_crc(), ErrorCode.corrupt_message),
        (batch(3)[:-5], ErrorCode.corrupt_message),
        (b"\x00" * 7, ErrorCode.corrupt_message),
        (b"", ErrorCode.invalid_record),
        (None, ErrorCode.invalid_record),
        (unknown_codec(), ErrorCode.unsupported_compression_type),
        (batch(1, value=b"x" * 5000), ErrorCode.message_too_large),
        (
            build_control_batch(
                ControlRecordType.COMMIT,
                producer_id=5,
                producer_epoch=0,
                coordinator_epoch=0,
                timestamp=1,
                base_offset=0,
            ),
            ErrorCode.invalid_record,
        ),
        (batch(1, producer_id=5, producer_epoch=0), ErrorCode.invalid_record),
    ],
    ids=[
        "crc",
        "truncated",
        "garbage",
        "empty",
        "null",
        "codec",
        "too-large",
        "control",
        "no-sequence",
    ],
)
def test_bad_batches_fail_only_their_partition(
    data: DataPath, records: bytes | None, error: ErrorCode
) -> None:
    data.create({"orders": 2}, log_config=LogConfig(max_message_bytes=4096))
    results = data.replica_manager.append_to_local_log(
        [(T0, records), (T1, batch(1))], required_acks=1
    )
    assert results[0][1].error == error
    assert results[0][1].message
    assert results[1][1].error == ErrorCode.none
    assert data.replica_manager.partition(T0).log_end_offset == 0
    assert data.replica_manager.partition(T1).log_end_offset == 1


def test_record_list_too_large(data: DataPath) -> None:
    data.create({"orders": 1}, log_config=LogConfig(segment_bytes=200))
    assert append(data, T0, batch(30)).error == ErrorCode.record_list_too_large  # type: ignore[attr-defined]


def test_idempotent_batch_with_sequence_is_appended(data: DataPath) -> None:
    data.create({"orders": 1})
    result = append(data, T0, batch(2, producer_id=5, producer_epoch=0, base_sequence=0))
    assert result.error == ErrorCode.none  # type: ignore[attr-defined]


def test_invalid_acks_append_nothing(data: DataPath) -> None:
    data.create({"orders": 2})
    results = data.replica_manager.append_to_local_log(
        [(T0, batch()), (T1, batch())], required_acks=2
    )
    assert [r.error for _, r in results] == [ErrorCode.invalid_required_acks] * 2
    assert data.replica_manager.partition(T0).log_end_offset == 0


def test_min_isr_counts_at_most_the_replicas(data: DataPath) -> None:
    """Kafka's effective min ISR: min.insync.replicas 2 on one replica asks for that one."""
    data.create({"orders": 1}, {"orders": {"min.insync.replicas": "2"}})
    assert append(data, T0, batch(), acks=-1).error == ErrorCode.none  # type: ignore[attr-defined]
    assert data.replica_manager.is_acknowledged(T0, 1) == ErrorCode.none


def test_internal_topics(data: DataPath) -> None:
    data.create({"__consumer_offsets": 1})
    tp = TopicPartition("__consumer_offsets", 0)
    assert append(data, tp, batch()).error == ErrorCode.invalid_topic_exception  # type: ignore[attr-defined]
    [(_, result)] = data.replica_manager.append_to_local_log(
        [(tp, batch())], required_acks=1, internal_topics_allowed=True
    )
    assert result.error == ErrorCode.none


def test_high_watermark_waits_for_the_isr(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    append(data, T0, batch(3))
    partition = data.replica_manager.partition(T0)
    assert (partition.log.high_watermark, partition.log_end_offset) == (0, 3)
    assert data.replica_manager.is_acknowledged(T0, 3) is None
    data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=2)
    assert partition.log.high_watermark == 2
    data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=3)
    assert partition.log.high_watermark == 3
    assert data.replica_manager.is_acknowledged(T0, 3) == ErrorCode.none
    # The batch's bytes count once the whole batch is below the high watermark.
    assert [u for tp, u in data.updates if tp == T0] == [
        HighWatermarkUpdate(0, 2, 0),
        HighWatermarkUpdate(2, 3, len(batch(3))),
    ]


def test_read_stops_at_the_high_watermark(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    append(data, T0, batch(2))
    data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=2)
    append(data, T0, batch(2))
    read = data.replica_manager.read(T0, fetch_offset=0, max_bytes=10_000, min_one_message=True)
    try:
        assert read.error == ErrorCode.none
        assert (read.high_watermark, read.last_stable_offset, read.log_start_offset) == (2, 2, 0)
        assert [r.offset for r in iter_records(b"".join(x.read() for x in read.regions))] == [0, 1]
    finally:
        read.close()
    empty = data.replica_manager.read(T0, fetch_offset=3, max_bytes=10_000, min_one_message=True)
    assert (empty.error, empty.size) == (ErrorCode.none, 0)


def test_read_errors(data: DataPath) -> None:
    data.create({"orders": {0: registration(leader_epoch=5)}})
    append(data, T0, batch(2))
    rm = data.replica_manager

    def error(**kwargs: int) -> ErrorCode:
        read = rm.read(T0, max_bytes=100, min_one_message=True, **kwargs)
        read.close()
        return read.error

    assert error(fetch_offset=3) == ErrorCode.offset_out_of_range
    assert error(fetch_offset=2) == ErrorCode.none
    assert error(fetch_offset=0, current_leader_epoch=4) == ErrorCode.fenced_leader_epoch
    assert error(fetch_offset=0, current_leader_epoch=6) == ErrorCode.unknown_leader_epoch
    assert error(fetch_offset=0, current_leader_epoch=5) == ErrorCode.none
    missing = rm.read(TopicPartition("x", 0), fetch_offset=0, max_bytes=1, min_one_message=True)
    assert missing.error == ErrorCode.unknown_topic_or_partition
    assert missing.high_watermark == -1


def test_list_offsets(data: DataPath) -> None:
    data.create({"orders": {0: registration(leader_epoch=3)}})
    append(data, T0, batch(3, timestamps=[100, 300, 200]))
    append(data, T0, batch(2, timestamps=[250, 260]))
    rm = data.replica_manager

    def answer(timestamp: int, isolation: int | None = 0) -> tuple[int, int, int]:
        found = rm.list_offset(T0, timestamp=timestamp, isolation_level=isolation)
        return found.offset, found.timestamp, found.leader_epoch

    assert answer(-2) == (0, -1, 3)
    assert answer(-1) == (5, -1, 3)
    assert answer(-1, READ_COMMITTED) == (5, -1, 3)
    assert answer(-1, None) == (5, -1, 3)
    assert answer(-3) == (1, 300, 3)
    assert answer(-4) == (0, -1, 3)
    assert answer(-5) == (-1, -1, -1)
    assert answer(150) == (1, 300, 3)
    assert answer(255) == (1, 300, 3)
    assert answer(301) == (-1, -1, -1)
    with pytest.raises(KafkaError) as failure:
        rm.list_offset(T0, timestamp=-1, isolation_level=0, current_leader_epoch=2)
    assert failure.value.error_code == ErrorCode.fenced_leader_epoch
    with pytest.raises(KafkaError) as failure:
        rm.list_offset(T0, timestamp=-7, isolation_level=0)
    assert failure.value.error_code == ErrorCode.invalid_request


def test_list_offsets_hides_what_is_above_the_high_watermark(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    append(data, T0, batch(2, timestamps=[100, 200]))
    data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=1)
    rm = data.replica_manager
    assert rm.list_offset(T0, timestamp=-1, isolation_level=0).offset == 1
    assert rm.list_offset(T0, timestamp=-1, isolation_level=None).offset == 2
    assert rm.list_offset(T0, timestamp=150, isolation_level=0).offset == -1
    assert rm.list_offset(T0, timestamp=150, isolation_level=None).offset == 1


def test_delete_records(data: DataPath, tmp_path: Path) -> None:
    data.create({"orders": 1})
    for _ in range(4):
        append(data, T0, batch(2))
    rm = data.replica_manager
    assert rm.delete_records(T0, 3) == 3
    assert rm.partition(T0).log_start_offset == 3
    checkpoint = (tmp_path / "data" / "log-start-offset-checkpoint").read_text()
    assert "orders 0 3" in checkpoint
    assert rm.delete_records(T0, 1) == 3  # never backwards
    for offset in (9, -2):
        with pytest.raises(KafkaError) as failure:
            rm.delete_records(T0, offset)
        assert failure.value.error_code == ErrorCode.offset_out_of_range
    assert rm.delete_records(T0, -1) == 8
    read = rm.read(T0, fetch_offset=2, max_bytes=100, min_one_message=True)
    assert read.error == ErrorCode.offset_out_of_range


def test_delete_records_needs_the_delete_policy(data: DataPath) -> None:
    data.create({"orders": 1}, log_config=LogConfig(cleanup_policy=frozenset({"compact"})))
    with pytest.raises(KafkaError) as failure:
        data.replica_manager.delete_records(T0, 0)
    assert failure.value.error_code == ErrorCode.policy_violation


def test_end_offset_for_epoch(data: DataPath) -> None:
    data.create({"orders": {0: registration(leader_epoch=4)}})
    append(data, T0, batch(3))
    rm = data.replica_manager
    assert rm.end_offset_for_epoch(T0, leader_epoch=4) == (4, 3)
    assert rm.end_offset_for_epoch(T0, leader_epoch=2) == (2, 0)
    assert rm.end_offset_for_epoch(T0, leader_epoch=5) == (-1, -1)
    assert rm.end_offset_for_epoch(T0, leader_epoch=-1) == (-1, -1)
    with pytest.raises(KafkaError) as failure:
        rm.end_offset_for_epoch(T0, leader_epoch=4, current_leader_epoch=5)
    assert failure.value.error_code == ErrorCode.unknown_leader_epoch


def test_recreated_topic_starts_from_its_new_log(data: DataPath) -> None:
    data.create({"orders": 1})
    append(data, T0, batch(5))
    assert data.replica_manager.partition(T0).log.high_watermark == 5
    data.log_manager.delete(T0)
    data.create({"orders": 1})
    partition = data.replica_manager.partition(T0)
    assert (partition.log.high_watermark, partition.log_end_offset) == (0, 0)
    assert append(data, T0, batch(1)).base_offset == 0  # type: ignore[attr-defined]


def test_restart_high_watermark_is_the_log_end(tmp_path: Path) -> None:
    first = DataPath(tmp_path)
    first.create({"orders": 1})
    append(first, T0, batch(4, compression=Compression.GZIP))
    first.log_manager.close()
    second = DataPath(tmp_path)
    try:
        second.create({"orders": 1}, open_logs=False)
        assert second.replica_manager.partition(T0).log.high_watermark == 4
        assert second.replica_manager.high_watermarks() == {T0: 4}
    finally:
        second.close()


def test_isolation_levels_map_to_fetch_isolations() -> None:
    assert fetch_isolation(READ_UNCOMMITTED) is FetchIsolation.HIGH_WATERMARK
    assert fetch_isolation(READ_COMMITTED) is FetchIsolation.TXN_COMMITTED
    assert fetch_isolation(READ_LOG_END) is FetchIsolation.LOG_END
