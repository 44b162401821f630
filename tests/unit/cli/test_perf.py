"""``strom perf``: payloads, latency bookkeeping and the final lines (no broker)."""

from __future__ import annotations

import pytest

from strom.cli.perf import (
    MAX_SAMPLES,
    PAYLOAD_POOL_BYTES,
    ConsumeResult,
    LatencyStats,
    ProduceResult,
    perf_producer_settings,
    random_payloads,
)


@pytest.mark.parametrize("size", [0, 1, 100, 1024, 3 * PAYLOAD_POOL_BYTES])
def test_payloads_are_distinct_letters_about_a_megabyte_of_them(size: int) -> None:
    payloads = random_payloads(size)
    assert payloads
    assert all(len(value) == size for value in payloads)
    assert all(value.isalpha() and value.isupper() for value in payloads if value)
    assert len(payloads) * size <= max(PAYLOAD_POOL_BYTES, size)
    if size >= 100:
        assert len(set(payloads)) == len(payloads)


def test_latency_windows_fold_into_totals() -> None:
    stats = LatencyStats(expected=10)
    stats.window.extend([0.001, 0.003])
    first = stats.fold()
    assert (first.count, first.avg_s, first.max_s) == (2, 0.002, 0.003)
    assert stats.fold().count == 0  # an empty window
    stats.window.append(0.002)
    stats.fold()
    assert (stats.count, stats.max_s) == (3, 0.003)
    assert stats.total_s == pytest.approx(0.006)
    assert stats.percentiles(0.5, 0.99) == [0.002, 0.003]


def test_samples_keep_every_nth_latency_across_windows() -> None:
    stats = LatencyStats(expected=MAX_SAMPLES * 3)
    assert stats.step == 3
    for window in ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9, 10]):
        stats.window.extend(float(value) for value in window)
        stats.fold()
    assert list(stats.samples) == [0.0, 3.0, 6.0, 9.0]
    assert stats.count == 11


def test_percentiles_of_nothing_are_zero() -> None:
    assert LatencyStats(expected=1).percentiles(0.5, 0.99) == [0.0, 0.0]


def test_final_lines() -> None:
    produced = ProduceResult(
        records=1000,
        record_size=1024,
        elapsed_s=0.5,
        avg_ms=2.5,
        max_ms=9.0,
        p50_ms=2.0,
        p95_ms=5.0,
        p99_ms=8.0,
        p999_ms=9.0,
    )
    assert produced.line() == (
        "1000 records sent, 2000.0 records/sec (1.95 MB/sec), 2.50 ms avg latency, "
        "9.00 ms max latency, 2.00 ms 50th, 5.00 ms 95th, 8.00 ms 99th, 9.00 ms 99.9th."
    )
    consumed = ConsumeResult(
        records=2048, value_bytes=2 * 1024 * 1024, first_record_s=0.0125, elapsed_s=2.0
    )
    assert consumed.line() == (
        "2048 records received, 1024.0 records/sec (1.00 MB/sec), 12.5 ms to first record."
    )
    nothing = ConsumeResult(records=0, value_bytes=0, first_record_s=None, elapsed_s=1.0)
    assert nothing.line().endswith(", no record.")


def test_producer_flags_become_librdkafka_settings() -> None:
    assert perf_producer_settings() == {}
    assert perf_producer_settings(
        acks="all", compression_type="lz4", linger_ms=0, batch_size=16384
    ) == {"acks": "all", "compression.type": "lz4", "linger.ms": "0", "batch.size": "16384"}
