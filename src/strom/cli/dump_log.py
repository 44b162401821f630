"""``strom dump-log --files F,...``: segment files read offline, printed in the lines of
``kafka-dump-log.sh`` (Kafka's ``DumpLogSegments``).

``.log`` files: one ``baseOffset: ... isvalid: ...`` line per batch (the CRC-32C checked), with
``--deep-iteration`` or ``--print-data-log`` a ``| offset: ...`` line per record (and its key and
payload with ``--print-data-log``; control records say their marker), and ``Found N invalid
bytes at the end of F`` for what is not a whole batch. ``.index``: ``offset: O position: P``;
``.timeindex``: ``timestamp: T offset: O``; ``.txnindex`` and a producer ``.snapshot``: Kafka's
aborted-transaction and producer lines.
The decoders print the records of ``__consumer_offsets``, ``__transaction_state`` and
``__cluster_metadata`` as JSON. Nothing here needs a broker: it reads the files as they are,
and may run beside a server that has them open.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from strom.cli.client_common import ClientCommand, CliError, handle_errors
from strom.common import KafkaError
from strom.protocol.batch import (
    DELETE_HORIZON_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    TimestampType,
    validate_batch,
)
from strom.protocol.records import Record, iter_records

__all__ = ["dump_log"]

_INDEX_ENTRY = struct.Struct(">ii")
_TIME_INDEX_ENTRY = struct.Struct(">qi")
_TXN_INDEX_ENTRY = struct.Struct(">hqqqq")
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                  4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}  # fmt: skip

Decoder = Callable[[bytes | None, bytes | None], tuple[str | None, str | None]]


@click.command("dump-log", cls=ClientCommand)
@click.option(
    "--files",
    required=True,
    metavar="FILE[,FILE...]",
    help="Comma-separated .log, .index, .timeindex, .txnindex or .snapshot files to dump.",
)
@click.option("--print-data-log", is_flag=True, help="Print each record's key and payload.")
@click.option("--deep-iteration", is_flag=True, help="Print each record, not only the batches.")
@click.option(
    "--offsets-decoder", "decoder", flag_value="offsets", help="Decode __consumer_offsets."
)
@click.option(
    "--transaction-log-decoder",
    "decoder",
    flag_value="transactions",
    help="Decode __transaction_state.",
)
@click.option(
    "--cluster-metadata-decoder",
    "decoder",
    flag_value="metadata",
    help="Decode __cluster_metadata.",
)
@click.option(
    "--skip-record-metadata", is_flag=True, help="With --print-data-log, only the contents."
)
@handle_errors
def dump_log(
    *,
    files: str,
    print_data_log: bool,
    deep_iteration: bool,
    decoder: str | None,
    skip_record_metadata: bool,
) -> None:
    """Print what segment files hold, offline, as kafka-dump-log.sh.

    \b
    Examples:
      strom dump-log --files data/orders-0/00000000000000000000.log --print-data-log
      strom dump-log --files data/orders-0/00000000000000000000.index
      strom dump-log --files data/__consumer_offsets-7/00000000000000000000.log \\
        --offsets-decoder
    """
    contents = print_data_log or decoder is not None
    for name in (f for f in files.split(",") if f):
        path = Path(name)
        click.echo(f"Dumping {path}")
        data = _read(path)
        suffix = path.suffix
        if suffix == ".log":
            _dump_log(
                path,
                data,
                deep=deep_iteration or contents,
                contents=contents,
                metadata=not skip_record_metadata,
                decode=_decoder(decoder),
            )
        elif suffix == ".index":
            _dump_entries(path, data, _INDEX_ENTRY, "offset: {0} position: {1}")
        elif suffix == ".timeindex":
            _dump_entries(path, data, _TIME_INDEX_ENTRY, "timestamp: {0} offset: {1}", offset_at=1)
        elif suffix == ".snapshot":
            _dump_producer_snapshot(path, data)
        elif suffix == ".txnindex":
            for entry in _TXN_INDEX_ENTRY.iter_unpack(data[: len(data) // 34 * 34]):
                click.echo(
                    "version: {} producerId: {} firstOffset: {} lastOffset: {} "
                    "lastStableOffset: {}".format(*entry)
                )
        else:
            click.echo(f"Ignoring unknown file {path}", err=True)


def _dump_producer_snapshot(path: Path, data: bytes) -> None:
    """A producer-state ``.snapshot``: one line per producer, as Kafka's tool prints it."""
    from strom.storage.producer_snapshot import (  # noqa: PLC0415
        CorruptSnapshotError,
        decode_snapshot,
    )

    try:
        entries = decode_snapshot(data)
    except CorruptSnapshotError as error:
        click.echo(f"{path}: {error}", err=True)
        return
    for entry in entries:
        first_offset = entry.current_txn_first_offset
        line = (
            f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
            + (f"OptionalLong[{first_offset}]" if first_offset >= 0 else "OptionalLong.empty")
            + f" lastTimestamp: {entry.timestamp}"
        )
        if entry.last_offset >= 0:
            line += (
                f" firstSequence: {entry.last_sequence - entry.offset_delta} "
                f"lastSequence: {entry.last_sequence} lastOffset: {entry.last_offset} "
                f"offsetDelta: {entry.offset_delta} timestamp: {entry.timestamp}"
            )
        click.echo(line)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None


def _base_offset(path: Path) -> int:
    digits = path.name.split(".")[0]
    if not digits.isdigit():
        raise CliError(f"{path}: not a segment file name (20 digits, then the suffix)")
    return int(digits)


def _dump_entries(
    path: Path, data: bytes, entry: struct.Struct, line: str, *, offset_at: int = 0
) -> None:
    """An index: absolute offsets; a zero entry after the first ends it (a preallocated tail)."""
    base = _base_offset(path)
    entries = list(entry.iter_unpack(data[: len(data) // entry.size * entry.size]))
    if not entries:
        click.echo(f"{path} is empty.")
    for i, fields in enumerate(entries):
        relative = fields[offset_at]
        if i > 0 and relative == 0:
            return
        values = list(fields)
        values[offset_at] = base + relative
        click.echo(line.format(*values))


def _dump_log(
    path: Path,
    data: bytes,
    *,
    deep: bool,
    contents: bool,
    metadata: bool,
    decode: Decoder,
) -> None:
    click.echo(f"Log starting offset: {_base_offset(path)}")
    position = 0
    for header in _batches(data):
        try:
            validate_batch(data, position, len(data), max_batch_bytes=2**31, from_client=False)
            valid = True
        except KafkaError:
            valid = False
        click.echo(_batch_line(header, position, valid))
        if deep:
            batch = memoryview(data)[position : position + header.size]
            try:
                records = list(iter_records(batch))
            except KafkaError as error:
                raise CliError(f"{path}: batch at position {position}: {error}") from None
            for record in records:
                click.echo(
                    _record_line(
                        header, record, contents=contents, metadata=metadata, decode=decode
                    )
                )
        position += header.size
    if position < len(data):
        click.echo(f"Found {len(data) - position} invalid bytes at the end of {path.name}")


def _batches(data: bytes) -> Iterator[BatchHeader]:
    """The headers of the whole batches from the start; stops at the first that is not one."""
    position = 0
    while position + HEADER_SIZE <= len(data):
        header = BatchHeader.read(data, position)
        if (
            header.magic != MAGIC_V2
            or header.batch_length < HEADER_SIZE - LOG_OVERHEAD
            or position + header.size > len(data)
        ):
            return
        yield header
        position += header.size


def _timestamp_type(header: BatchHeader) -> str:
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return "LogAppendTime"
    return "CreateTime"


def _batch_line(header: BatchHeader, position: int, valid: bool) -> str:
    horizon = (
        f"OptionalLong[{header.base_timestamp}]"
        if header.attributes & DELETE_HORIZON_FLAG
        else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.record_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {str(header.is_transactional).lower()} "
        f"isControl: {str(header.is_control).lower()} deleteHorizonMs: {horizon} "
        f"position: {position} {_timestamp_type(header)}: {header.max_timestamp} "
        f"size: {header.size} magic: {header.magic} "
        f"compresscodec: {header.compression.name.lower()} crc: {header.crc} "
        f"isvalid: {str(valid).lower()}"
    )


def _record_line(
    header: BatchHeader, record: Record, *, contents: bool, metadata: bool, decode: Decoder
) -> str:
    line = ""
    if metadata:
        sequence = (
            -1
            if header.base_sequence < 0
            else (header.base_sequence + record.offset - header.base_offset) % 2**31
        )
        keys = ",".join(key for key, _ in record.headers)
        line = (
            f"| offset: {record.offset} {_timestamp_type(header)}: {record.timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} "
            f"sequence: {sequence} headerKeys: [{keys}]"
        )
        if header.is_control:
            line += _control(record.key, record.value)
    if contents and not header.is_control:
        key, payload = decode(record.key, record.value)
        prefix = " " if metadata else "| "
        if key is not None:
            line += f"{prefix}key: {key}"
            prefix = " "
        if payload is not None:
            line += f"{prefix}payload: {payload}"
    return line


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _control(key: bytes | None, value: bytes | None) -> str:
    if key is None or len(key) < _CONTROL_KEY.size:
        return " controlType: UNKNOWN(-1)"
    _, kind = _CONTROL_KEY.unpack_from(key)
    name = _CONTROL_TYPES.get(kind, "UNKNOWN")
    if name in ("ABORT", "COMMIT") and value is not None and len(value) >= _MARKER_VALUE.size:
        _, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
        return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
    return f" controlType: {name}({kind})"


def _decoder(name: str | None) -> Decoder:
    """How keys and payloads print: as UTF-8 text (Kafka's StringDecoder), or decoded."""
    if name is None:
        return _as_text
    from strom.cli.dump_log_decoders import DECODERS  # noqa: PLC0415

    return DECODERS[name]


def _as_text(key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8", errors="replace")

    return text(key), text(value)
