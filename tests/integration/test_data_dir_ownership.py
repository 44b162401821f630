"""A data directory belongs to one process (Kafka's ``.lock``), and a segment damaged in the
middle stops the start with one line instead of a traceback or a silent cut."""

from __future__ import annotations

import signal
import struct
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from strom_harness import StartServer, StromServer, strom_server_args

TIMEOUT = 30.0


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """One batch per value (a flush after each), acknowledged by the broker."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value=value, partition=0)
        assert producer.flush(TIMEOUT) == 0
    assert producer.flush(TIMEOUT) == 0


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(int(TIMEOUT * 2)):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            value = message.value()
            assert value is not None
            values.append(value)
            if len(values) == count:
                break
    finally:
        consumer.close()
    return values


def refused(tmp_path: Path) -> StromServer:
    """A second ``strom server`` on ``tmp_path/data``, run until it exits."""
    second = StromServer(strom_server_args(data_dir=tmp_path / "data"), cwd=tmp_path)
    second.wait_exit(timeout=TIMEOUT)
    return second


def test_a_second_server_on_the_same_data_dir_is_refused(
    start_server: StartServer, tmp_path: Path
) -> None:
    first = start_server()
    produce(first.bootstrap, "owned", [b"before"])
    second = refused(tmp_path)
    assert second.process.returncode == 1
    data_dir = tmp_path / "data"
    assert second.lines == [
        f"strom server: data directory {data_dir} is in use by process {first.process.pid} "
        f"(it holds {data_dir}/.lock): stop that process, or give this one another directory"
    ]
    # The first is untouched and goes on serving a real client.
    produce(first.bootstrap, "owned", [b"after"])
    assert consume_all(first.bootstrap, "owned", 2) == [b"before", b"after"]
    assert first.process.poll() is None


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["clean", "killed"])
def test_the_lock_goes_with_its_process(
    start_server: StartServer, tmp_path: Path, stop: signal.Signals
) -> None:
    """A stopped or killed server leaves no lock behind: the next one starts."""
    first = start_server()
    first.stop(stop)
    assert start_server().data_dir == tmp_path / "data"


def _segment(data_dir: Path, topic: str) -> Path:
    return data_dir / f"{topic}-0" / "00000000000000000000.log"


@pytest.mark.parametrize(
    ("stop", "damage"),
    [(signal.SIGKILL, "crc"), (signal.SIGKILL, "magic"), (signal.SIGTERM, "magic")],
    ids=["recovered-crc", "recovered-magic", "clean-magic"],
)
def test_a_corrupt_middle_batch_is_one_line_naming_the_file(
    start_server: StartServer, tmp_path: Path, stop: signal.Signals, damage: str
) -> None:
    """After a crash (recovery rescans the segment) and after a clean stop (no rescan, the start
    walks the batch headers): the damaged middle batch stops the start, nothing is cut, and
    the advice given works."""
    server = start_server()
    produce(server.bootstrap, "damaged", [b"one", b"two", b"three"])
    server.stop(stop)
    segment = _segment(tmp_path / "data", "damaged")
    data = bytearray(segment.read_bytes())
    (length,) = struct.unpack_from(">i", data, 8)
    second = 12 + length
    data[second + (61 if damage == "crc" else 16)] ^= 0xFF
    segment.write_bytes(data)

    failed = refused(tmp_path)
    assert failed.process.returncode == 1
    assert "Traceback" not in failed.output
    [line] = [line for line in failed.lines if not line[:4].isdigit()]  # but the log lines
    assert line.startswith(f"strom server: segment {segment} is corrupt at byte {second}")
    assert f"truncate -s {second} {segment}" in line
    assert segment.read_bytes() == data  # nothing cut

    # The operator keeps what is before the damage, as the line says.
    with segment.open("r+b") as file:
        file.truncate(second)
    for index in (".index", ".timeindex"):
        segment.with_suffix(index).unlink(missing_ok=True)
    restarted = start_server()
    assert consume_all(restarted.bootstrap, "damaged", 1) == [b"one"]
