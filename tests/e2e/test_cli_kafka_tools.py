"""``strom get-offsets``, ``delete-records``, ``log-dirs`` and ``transactions``, the commands
that mirror ``kafka-get-offsets.sh``, ``kafka-delete-records.sh``, ``kafka-log-dirs.sh`` and
``kafka-transactions.sh``: subprocesses against a real ``strom server``, with real clients
writing what they read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from strom_harness import strom_command

from .conftest import Result, Server

TIMEOUT = 30.0


def produce(
    server: Server, topic: str, partition: int, values: list[bytes], *, timestamp: int = 0
) -> None:
    """One acknowledged batch per value (0: the producer's clock as the timestamp)."""
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value=value, partition=partition, timestamp=timestamp)
        assert producer.flush(TIMEOUT) == 0


def create(server: Server, topic: str, partitions: int) -> None:
    server.run("topics", "create", topic, "--partitions", str(partitions))


# --- get-offsets ------------------------------------------------------------------------------


def test_get_offsets_prints_topic_partition_offset(server: Server) -> None:
    create(server, "go-orders", 3)
    produce(server, "go-orders", 0, [b"a"], timestamp=1_000)
    produce(server, "go-orders", 0, [b"b"], timestamp=2_000)
    produce(server, "go-orders", 2, [b"c"], timestamp=5_000)
    latest = server.run("get-offsets", "--topic", "go-orders")
    assert latest.lines == ["go-orders:0:2", "go-orders:1:0", "go-orders:2:1"]
    earliest = server.run(
        "get-offsets", "--topic", "go-or.*", "--time", "-2", "--partitions", "0,2"
    )
    assert earliest.lines == ["go-orders:0:0", "go-orders:2:0"]
    by_time = server.run("get-offsets", "--topic-partitions", "go-orders:1-", "--time", "2000")
    assert by_time.lines == ["go-orders:2:0"]  # partition 1 has no record at or after it
    max_timestamp = server.run("get-offsets", "--topic", "go-orders", "--time", "max-timestamp")
    assert max_timestamp.lines == ["go-orders:0:1", "go-orders:2:0"]


def test_get_offsets_errors_are_one_line(server: Server) -> None:
    missing = server.run("get-offsets", "--topic", "go-missing", ok=False)
    assert missing.returncode == 1
    assert missing.error_lines == [
        "Error: Could not match any topic-partitions with the specified filters"
    ]
    bad_time = server.run("get-offsets", "--time", "yesterday", ok=False)
    assert bad_time.returncode == 2
    assert len(bad_time.error_lines) == 1 and "--time" in bad_time.stderr
    both = server.run("get-offsets", "--topic", "a", "--topic-partitions", "b", ok=False)
    assert both.error_lines == [
        "Error: --topic-partitions cannot be used with --topic or --partitions"
    ]


# --- delete-records ---------------------------------------------------------------------------


def test_delete_records_from_an_offset_json_file(server: Server, tmp_path: Path) -> None:
    create(server, "dr-orders", 3)
    produce(server, "dr-orders", 0, [b"a", b"b", b"c"])
    produce(server, "dr-orders", 1, [b"d", b"e"])
    plan = tmp_path / "delete.json"
    plan.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "dr-orders", "partition": 0, "offset": 2},
                    {"topic": "dr-orders", "partition": 1, "offset": -1},
                ],
                "version": 1,
            }
        )
    )
    result = server.run("delete-records", "--offset-json-file", str(plan))
    assert result.lines[:2] == [
        "Executing records delete operation",
        "Records delete operation completed:",
    ]
    assert sorted(result.lines[2:]) == [
        "partition: dr-orders-0\tlow_watermark: 2",
        "partition: dr-orders-1\tlow_watermark: 2",
    ]
    earliest = server.run("get-offsets", "--topic", "dr-orders", "--time", "earliest")
    assert earliest.lines == ["dr-orders:0:2", "dr-orders:1:2", "dr-orders:2:0"]


def test_delete_records_reports_each_failed_partition(server: Server, tmp_path: Path) -> None:
    create(server, "dr-short", 1)
    plan = tmp_path / "delete.json"
    plan.write_text('{"partitions": [{"topic": "dr-short", "partition": 0, "offset": 9}]}')
    result = server.run("delete-records", "--offset-json-file", str(plan), ok=False)
    assert result.returncode == 1
    assert result.lines[-1] == (
        "partition: dr-short-0\terror: OFFSET_OUT_OF_RANGE: Broker: Offset out of range"
    )
    assert result.error_lines == ["Error: 1 partition(s) failed"]


def test_delete_records_refuses_a_bad_file_in_one_line(server: Server, tmp_path: Path) -> None:
    plan = tmp_path / "delete.json"
    for text, message in [
        ("{", "The input string is not a valid JSON"),
        ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1},'
            ' {"topic": "t", "partition": 0, "offset": 2}]}',
            "Offset json file contains duplicate topic partitions: t-0",
        ),
    ]:
        plan.write_text(text)
        result = server.run("delete-records", "--offset-json-file", str(plan), ok=False)
        assert (result.returncode, result.error_lines) == (1, [f"Error: {message}"])


# --- log-dirs ---------------------------------------------------------------------------------


def test_log_dirs_describe_in_kafkas_json(server: Server) -> None:
    create(server, "ld-orders", 2)
    produce(server, "ld-orders", 1, [b"x" * 100])
    result = server.run("log-dirs", "--describe", "--topic-list", "ld-orders")
    querying, received, document = result.lines
    assert querying == "Querying brokers for log directories information"
    assert received == f"Received log directory information from brokers {server.node_id}"
    described = json.loads(document)
    assert described["version"] == 1
    [broker] = described["brokers"]
    assert broker["broker"] == server.node_id
    [log_dir] = broker["logDirs"]
    assert log_dir["error"] is None
    assert Path(log_dir["logDir"]).name == "data"
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sizes.keys() == {"ld-orders-0", "ld-orders-1"}
    assert sizes["ld-orders-0"] == 0 and sizes["ld-orders-1"] > 100
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in log_dir["partitions"])


def test_log_dirs_names_missing_brokers(server: Server) -> None:
    result = server.run("log-dirs", "--describe", "--broker-list", "77", ok=False)
    assert result.error_lines == [
        "Error: The given brokers do not exist from --broker-list: 77. "
        f"Current existent brokers: {server.node_id}"
    ]
    assert server.run("log-dirs", ok=False).error_lines == ["Error: --describe is required"]


# --- transactions -----------------------------------------------------------------------------

_OPEN_TRANSACTION = """
import os, sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2]})
producer.init_transactions(30)
producer.begin_transaction()
producer.produce(sys.argv[3], b"pending", partition=0, timestamp=1000)
assert producer.flush(30) == 0
os._exit(0)  # gone without committing: the transaction stays open
"""


def open_transaction(server: Server, transactional_id: str, topic: str) -> None:
    """A real producer that writes in a transaction and goes away without ending it."""
    subprocess.run(
        [sys.executable, "-c", _OPEN_TRANSACTION, server.bootstrap, transactional_id, topic],
        check=True,
        timeout=60,
        env=os.environ,
    )


def rows(result_lines: list[str]) -> list[list[str]]:
    """Kafka's table: tab-ended, space-padded cells."""
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in result_lines]


def test_transactions_list_describe_and_abort_an_open_one(server: Server) -> None:
    create(server, "tx-orders", 1)
    produce(server, "tx-orders", 0, [b"before"])
    open_transaction(server, "tx-app", "tx-orders")
    bootstrap = ["--bootstrap-server", server.bootstrap]

    listed = rows(server.run("transactions", *bootstrap, "list").lines)  # Kafka's order
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    [mine] = [row for row in listed[1:] if row[0] == "tx-app"]
    assert mine[1] == str(server.node_id) and mine[3] == "Ongoing"
    producer_id = mine[2]

    described = rows(server.run("transactions", "describe", "--transactional-id", "tx-app").lines)
    assert described[0][:5] == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
    ]
    assert described[1][1:3] == ["tx-app", producer_id]
    assert described[1][4] == "Ongoing" and described[1][8] == "tx-orders-0"

    producers = rows(
        server.run(
            "transactions", "describe-producers", "--topic", "tx-orders", "--partition", "0"
        ).lines
    )
    assert producers[0][-1] == "CurrentTransactionStartOffset"
    [open_one] = [row for row in producers[1:] if row[0] == producer_id]
    assert open_one[4] == "1000" and open_one[5] == "1"  # after the one record before it

    # The coordinator has it open there: not hanging, however old its records look.
    hanging = server.run(
        "transactions", "find-hanging", "--topic", "tx-orders", "--max-transaction-timeout", "1"
    )
    assert rows(hanging.lines)[1:] == []
    assert server.run("get-offsets", "--topic", "tx-orders").lines == ["tx-orders:0:2"]

    aborted = server.run(
        "transactions", "abort", "--topic", "tx-orders", "--partition", "0", "--start-offset", "1"
    )
    assert aborted.lines == [
        f"Aborted the transaction of producer {producer_id} (epoch 0) in tx-orders-0"
    ]
    after = rows(
        server.run(
            "transactions", "describe-producers", "--topic", "tx-orders", "--partition", "0"
        ).lines
    )
    assert [row[5] for row in after[1:] if row[0] == producer_id] == ["None"]
    # The ABORT marker is in the log: the last stable offset moved past the transaction.
    consumed = server.run(
        "consume",
        "tx-orders",
        "--from-beginning",
        "--max-messages",
        "1",
        "--timeout-ms",
        "20000",
        "--isolation-level",
        "read_committed",
    )
    assert consumed.lines == ["before"]
    txn_index = server.process.data_dir / "tx-orders-0" / "00000000000000000000.txnindex"
    assert dump_log("--files", str(txn_index)).lines == [
        f"Dumping {txn_index}",
        f"version: 0 producerId: {producer_id} firstOffset: 1 lastOffset: 2 lastStableOffset: 3",
    ]


def test_transactions_errors_are_one_line(server: Server) -> None:
    create(server, "tx-none", 1)
    unknown = server.run("transactions", "describe", "--transactional-id", "tx-nobody", ok=False)
    assert unknown.error_lines == [
        "Error: Failed to describe transaction state of transactional-id `tx-nobody`: "
        "TRANSACTIONAL_ID_NOT_FOUND"
    ]
    no_open = server.run(
        "transactions",
        "abort",
        "--topic",
        "tx-none",
        "--partition",
        "0",
        "--start-offset",
        "7",
        ok=False,
    )
    assert no_open.error_lines == [
        "Error: Could not find any open transactions starting at offset 7 on partition tx-none-0"
    ]
    unidentified = server.run(
        "transactions", "abort", "--topic", "tx-none", "--partition", "0", ok=False
    )
    assert unidentified.returncode == 1 and len(unidentified.error_lines) == 1
    assert "--start-offset" in unidentified.stderr


# --- features ---------------------------------------------------------------------------------


def test_features_describe_from_api_versions(server: Server) -> None:
    result = server.run("features", "describe")
    lines = [dict(cell.split(": ", 1) for cell in line.split("\t")) for line in result.lines]
    by_name = {line["Feature"]: line for line in lines}
    assert sorted(by_name) == ["eligible.leader.replicas.version", "metadata.version"]
    metadata = by_name["metadata.version"]
    assert metadata["SupportedMinVersion"] == "3.3-IV3"
    assert metadata["FinalizedVersionLevel"] == metadata["SupportedMaxVersion"] == "3.6-IV2"
    assert int(metadata["Epoch"]) > 0
    # Kafka's order: the connection options before the verb.
    before = server.run("features", "--bootstrap-server", server.bootstrap, "describe")
    assert len(before.lines) == 2


def finalized(server: Server, feature: str) -> str:
    for line in server.run("features", "describe").lines:
        cells = dict(cell.split(": ", 1) for cell in line.split("\t"))
        if cells["Feature"] == feature:
            return cells["FinalizedVersionLevel"]
    raise AssertionError(f"no {feature}")


def test_features_downgrade_and_upgrade_through_the_controller(server: Server) -> None:
    elr = "eligible.leader.replicas.version"
    dry = server.run("features", "downgrade", "--feature", f"{elr}=0", "--dry-run")
    assert dry.lines == [f"{elr} can be downgraded to 0."]
    assert finalized(server, elr) == "1"
    assert server.run("features", "disable", "--feature", elr).lines == [f"{elr} was disabled."]
    assert finalized(server, elr) == "0"
    upgraded = server.run("features", "upgrade", "--feature", f"{elr}=1")
    assert upgraded.lines == [f"{elr} was upgraded to 1."]
    assert finalized(server, elr) == "1"


def test_features_refusals_are_kafkas_lines(server: Server) -> None:
    refused = server.run("features", "downgrade", "--metadata", "3.5", ok=False)
    assert refused.returncode == 1
    assert refused.lines == [
        "Could not downgrade metadata.version to 3.5-IV2. INVALID_UPDATE_VERSION: "
        "metadata.version cannot be downgraded"
    ]
    assert refused.error_lines == ["Error: 1 out of 1 operation(s) failed."]
    unknown = server.run("features", "upgrade", "--feature", "nope.version=1", ok=False)
    assert unknown.lines == [
        "Could not upgrade nope.version to 1. INVALID_UPDATE_VERSION: "
        "the controller does not support nope.version level 1"
    ]
    assert finalized(server, "metadata.version") == "3.6-IV2"


# --- dump-log ---------------------------------------------------------------------------------


def dump_log(*args: str, ok: bool = True) -> Result:
    """``strom dump-log ARGS``: offline, no broker."""
    completed = subprocess.run(
        [*strom_command(), "dump-log", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    result = Result(completed.returncode, completed.stdout, completed.stderr)
    if ok:
        assert result.returncode == 0 and "Traceback" not in result.stderr, result
    return result


def test_dump_log_prints_kafkas_lines(server: Server, tmp_path: Path) -> None:
    create(server, "dl-orders", 1)
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    producer.produce("dl-orders", key=b"k1", value=b"hello", headers=[("h", b"1")], timestamp=1234)
    assert producer.flush(TIMEOUT) == 0
    segment = server.process.data_dir / "dl-orders-0" / "00000000000000000000.log"

    dumped = dump_log("--files", str(segment), "--print-data-log").lines
    assert dumped[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    batch, record = dumped[2:]
    assert batch.startswith("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: ")
    assert " isControl: false deleteHorizonMs: OptionalLong.empty position: 0 " in batch
    assert " CreateTime: 1234 " in batch and batch.endswith(" isvalid: true")
    assert record.startswith("| offset: 0 CreateTime: 1234 keySize: 2 valueSize: 5 sequence: ")
    assert record.endswith(" headerKeys: [h] key: k1 payload: hello")
    shallow = dump_log("--files", str(segment)).lines
    assert shallow == dumped[:3]

    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes(segment.read_bytes() + b"\x00" * 7)
    assert dump_log("--files", str(torn)).lines[-1] == (
        "Found 7 invalid bytes at the end of 00000000000000000000.log"
    )


def test_dump_log_decodes_the_cluster_metadata(server: Server) -> None:
    create(server, "dl-decoded", 1)
    metadata = server.process.data_dir / "__cluster_metadata-0"
    segments = sorted(str(p) for p in metadata.glob("*.log"))
    dumped = dump_log("--files", ",".join(segments), "--cluster-metadata-decoder").stdout
    records = [
        json.loads(line.split(" payload: ", 1)[1])
        for line in dumped.splitlines()
        if " payload: " in line
    ]
    topics = [r["data"]["name"] for r in records if r["type"] == "TOPIC_RECORD"]
    assert "dl-decoded" in topics
    assert {"type": "FEATURE_LEVEL_RECORD", "version": 0}.items() <= records[0].items()


def test_dump_log_errors_are_one_line(server: Server, tmp_path: Path) -> None:
    missing = dump_log("--files", str(tmp_path / "nope.log"), ok=False)
    assert missing.returncode == 1
    assert missing.error_lines == [
        f"Error: cannot read {tmp_path / 'nope.log'}: No such file or directory"
    ]
