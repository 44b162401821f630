"""Partition log throughput next to raw sequential file I/O of the same bytes.

Appends 16 KB batches of 100 B or 1 KB records to a fresh ``PartitionLog`` and reads them back
in 1 MB fetches, then writes and reads the very same bytes with plain ``os.write``/``os.read``
in the same chunk sizes. Prints MB/s for both and the ratio. Run: ``.venv/bin/python
bench/storage.py [--megabytes 256] [--runs 3]``.

A fetch ends after the last whole batch within its byte limit; the next fetch starts at the
batch after it (what a consumer does), so read MB/s counts each byte of the log once. Each
figure is the best of ``--runs`` runs (strom and
raw alternate, each in a fresh directory of the same file system), because a shared machine's
noise is larger than the differences measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from strom.common.clock import SystemClock
from strom.protocol.records import Record, build_batch
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

BATCH_BYTES = 16 * 1024
FETCH_BYTES = 1024 * 1024


def make_batch(record_size: int) -> bytes:
    now = time.time_ns() // 1_000_000
    value = os.urandom(record_size)
    count = max(1, BATCH_BYTES // (record_size + 12))
    return build_batch(
        [Record(offset=i, timestamp=now, key=None, value=value) for i in range(count)]
    )


def timed(work: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    done = work()
    return time.perf_counter() - start, done


def bench_log(directory: Path, batch: bytes, batches: int) -> tuple[float, float]:
    log = PartitionLog.open(directory, config=LogConfig(segment_bytes=1 << 30), clock=SystemClock())

    def append() -> int:
        for _ in range(batches):
            log.append(batch)
        return batches * len(batch)

    def read() -> int:
        offset, fetched = log.log_start_offset, 0
        while offset < log.log_end_offset:
            result = log.read(offset, max_bytes=FETCH_BYTES)
            fetched += len(result.read())
            result.close()
            offset = result.next_offset
        return fetched

    write_s, written = timed(append)
    read_s, fetched = timed(read)
    assert written <= fetched < written * 1.1, (written, fetched)
    log.close()
    return written / write_s, written / read_s


def bench_raw(path: Path, batch: bytes, batches: int) -> tuple[float, float]:
    def write() -> int:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for _ in range(batches):
                os.write(fd, batch)
        finally:
            os.close(fd)
        return batches * len(batch)

    def read() -> int:
        fd = os.open(path, os.O_RDONLY)
        total = 0
        try:
            while chunk := os.read(fd, FETCH_BYTES):
                total += len(chunk)
        finally:
            os.close(fd)
        return total

    write_s, written = timed(write)
    read_s, _ = timed(read)
    return written / write_s, written / read_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256, help="data per run (default 256)")
    parser.add_argument("--runs", type=int, default=3, help="best of this many (default 3)")
    args = parser.parse_args()
    print(f"{'workload':<28}{'strom MB/s':>12}{'raw MB/s':>12}{'ratio':>8}")
    for record_size in (100, 1024):
        batch = make_batch(record_size)
        batches = args.megabytes * 1024 * 1024 // len(batch)
        log_write = log_read = raw_write = raw_read = 0.0
        for _ in range(args.runs):
            root = Path(tempfile.mkdtemp(prefix="strom-bench-"))
            try:
                run_write, run_read = bench_log(root / "bench-0", batch, batches)
                log_write, log_read = max(log_write, run_write), max(log_read, run_read)
                run_write, run_read = bench_raw(root / "raw.bin", batch, batches)
                raw_write, raw_read = max(raw_write, run_write), max(raw_read, run_read)
            finally:
                shutil.rmtree(root)
        for name, ours, raw in (
            (f"append {record_size} B records", log_write, raw_write),
            (f"read {record_size} B records", log_read, raw_read),
        ):
            print(f"{name:<28}{ours / 1e6:>12.0f}{raw / 1e6:>12.0f}{ours / raw:>8.2f}")


if __name__ == "__main__":
    main()
