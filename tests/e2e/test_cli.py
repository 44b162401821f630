"""The ``strom`` client commands end to end, as subprocesses against a real ``strom server``.

These switch on by themselves once the broker handles the Metadata API (a
``strom.server.handlers.metadata`` module exists). Each test uses topics of its own; the group
commands are ``test_cli_groups.py``'s.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from kafka.partitioner.default import murmur2 as java_murmur2

from strom.config import SERVER_SETTINGS

from .conftest import Result, Server


def _has_handler(api: str) -> bool:
    return importlib.util.find_spec(f"strom.server.handlers.{api}") is not None


pytestmark = pytest.mark.skipif(
    not _has_handler("metadata"),
    reason="the broker does not handle the Metadata API yet (no strom.server.handlers.metadata)",
)

PRINT_ALL = [
    "--print-key",
    "--print-headers",
    "--print-timestamp",
    "--print-partition",
    "--print-offset",
]
SAFETY = ["--timeout-ms", "20000"]
"""With ``--max-messages``: a missing message fails the count instead of hanging the test."""

T = TypeVar("T")


def eventually(check: Callable[[], T], *, timeout: float = 10.0) -> T:
    """``check()``'s value once it stops failing its assertions."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def header_fields(result: Result, topic: str) -> dict[str, str]:
    """``Topic: t<TAB>TopicId: ...`` of ``topics describe`` as a dict."""
    for line in result.lines:
        if line.startswith(f"Topic: {topic}\t"):
            return dict(field.split(": ", 1) for field in line.split("\t"))
    raise AssertionError(f"no summary line for {topic!r} in:\n{result.stdout}")


def partition_rows(result: Result) -> dict[int, list[str]]:
    """The partition table of ``topics describe`` (one topic): partition -> its columns."""
    rows: dict[int, list[str]] = {}
    for line in result.lines:
        cells = line.split()
        if cells and cells[0].isdigit() and not line.startswith("Topic:"):
            rows[int(cells[0])] = cells
    return rows


def config_table(result: Result) -> dict[str, tuple[str, str]]:
    """``configs describe``'s table: name -> (value, source)."""
    header, *rows = result.lines
    value_at, source_at = header.index("VALUE"), header.index("SOURCE")
    return {
        row[:value_at].strip(): (row[value_at:source_at].strip(), row[source_at:].strip())
        for row in rows
    }


def one_error(result: Result) -> str:
    assert result.returncode == 1, result
    assert len(result.error_lines) == 1, result.error_lines
    line = result.error_lines[0]
    assert line.startswith("Error: ")
    assert "Traceback" not in result.stderr
    return line


def consume_values(server: Server, topic: str, count: int, *options: str) -> list[str]:
    result = server.run(
        "consume", topic, "--from-beginning", "--max-messages", str(count), *SAFETY, *options
    )
    assert result.error_lines == [f"Processed a total of {count} messages"], result
    return result.lines


# --- topics -----------------------------------------------------------------------------


def test_create_list_and_describe(server: Server) -> None:
    created = server.run(
        "topics",
        "create",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=86400000",
        "--config",
        "cleanup.policy=compact",
    )
    assert created.lines == ["Created topic orders."]
    assert "orders" in server.run("topics", "list").lines

    described = server.run("topics", "describe", "orders")
    fields = header_fields(described, "orders")
    assert fields["PartitionCount"] == "3"
    assert fields["ReplicationFactor"] == "1"
    assert fields["TopicId"] and set(fields["TopicId"]) != {"A"}
    assert set(fields["Configs"].split(",")) >= {"retention.ms=86400000", "cleanup.policy=compact"}
    node = str(server.node_id)
    assert partition_rows(described) == {
        p: [str(p), node, node, node, "-", "-", "-", "0", "0"] for p in range(3)
    }


def test_create_uses_the_broker_defaults(server: Server) -> None:
    server.run("topics", "create", "defaults")
    fields = header_fields(server.run("topics", "describe", "defaults"), "defaults")
    assert fields["PartitionCount"] == "2"  # num.partitions of the server
    assert fields["ReplicationFactor"] == "1"


def test_create_twice(server: Server) -> None:
    server.run("topics", "create", "twice", "--partitions", "1")
    again = server.run("topics", "create", "twice", "--partitions", "1", ok=False)
    assert one_error(again).startswith("Error: cannot create topic 'twice': TOPIC_ALREADY_EXISTS")
    quiet = server.run("topics", "create", "twice", "--if-not-exists")
    assert (quiet.stdout, quiet.stderr) == ("", "")


def test_create_with_an_invalid_config(server: Server) -> None:
    result = server.run("topics", "create", "bad-config", "--config", "retention.ms=soon", ok=False)
    assert "INVALID_CONFIG" in one_error(result)
    assert "bad-config" not in server.run("topics", "list").lines


def test_list_and_describe_every_topic(server: Server) -> None:
    for name in ("every-a", "every-b"):
        server.run("topics", "create", name, "--partitions", "1")
    listed = server.run("topics", "list", "--exclude-internal").lines
    assert {"every-a", "every-b"} <= set(listed)
    assert listed == sorted(listed)
    assert not [name for name in listed if name.startswith("__")]
    described = server.run("topics", "describe", "--exclude-internal")
    for name in ("every-a", "every-b"):
        assert header_fields(described, name)["PartitionCount"] == "1"


def test_alter_partitions(server: Server) -> None:
    server.run("topics", "create", "growing", "--partitions", "2")
    grown = server.run("topics", "alter", "growing", "--partitions", "5")
    assert grown.lines == ["Topic growing now has 5 partitions."]
    described = server.run("topics", "describe", "growing")
    assert header_fields(described, "growing")["PartitionCount"] == "5"
    assert sorted(partition_rows(described)) == [0, 1, 2, 3, 4]
    shrunk = server.run("topics", "alter", "growing", "--partitions", "3", ok=False)
    assert "INVALID_PARTITIONS" in one_error(shrunk)


def test_alter_configs(server: Server) -> None:
    server.run(
        "topics", "create", "tuned", "--partitions", "1", "--config", "cleanup.policy=compact"
    )
    altered = server.run(
        "topics",
        "alter",
        "tuned",
        "--config",
        "retention.ms=1000",
        "--delete-config",
        "cleanup.policy",
    )
    assert altered.lines == ["Updated the configs of topic tuned."]
    configs = header_fields(server.run("topics", "describe", "tuned"), "tuned")["Configs"]
    assert "retention.ms=1000" in configs.split(",")
    assert "cleanup.policy" not in configs


def test_delete(server: Server) -> None:
    server.run("topics", "create", "doomed", "--partitions", "1")
    assert server.run("topics", "delete", "doomed").lines == ["Deleted topic doomed."]
    eventually(lambda: _assert_absent(server, "doomed"))
    again = server.run("topics", "delete", "doomed", ok=False)
    assert "UNKNOWN_TOPIC_OR_PART" in one_error(again)
    quiet = server.run("topics", "delete", "doomed", "--if-exists")
    assert (quiet.stdout, quiet.stderr) == ("", "")
    missing = server.run("topics", "describe", "doomed", ok=False)
    assert one_error(missing).startswith("Error: cannot describe topic 'doomed'")


def _assert_absent(server: Server, topic: str) -> None:
    assert topic not in server.run("topics", "list").lines


# --- configs ----------------------------------------------------------------------------


def test_configs_describe_a_topic(server: Server) -> None:
    server.run("topics", "create", "cfg-plain", "--partitions", "1")
    result = server.run(
        "configs", "describe", "--entity-type", "topics", "--entity-name", "cfg-plain"
    )
    assert result.lines[0].split() == ["NAME", "VALUE", "SOURCE"]
    table = config_table(result)
    assert table["retention.ms"] == ("604800000", "default")
    assert table["cleanup.policy"] == ("delete", "default")
    assert list(table) == sorted(table)


def test_configs_alter_a_topic(server: Server) -> None:
    server.run("topics", "create", "cfg-tuned", "--partitions", "1")
    entity = ["--entity-type", "topics", "--entity-name", "cfg-tuned"]
    added = server.run(
        "configs",
        "alter",
        *entity,
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
    )
    assert added.lines == ["Completed updating config for topic cfg-tuned."]
    table = config_table(server.run("configs", "describe", *entity))
    assert table["retention.ms"] == ("1000", "topic")
    assert table["cleanup.policy"] == ("compact,delete", "topic")
    dynamic = config_table(server.run("configs", "describe", *entity, "--dynamic-only"))
    assert set(dynamic) == {"retention.ms", "cleanup.policy"}

    server.run("configs", "alter", *entity, "--delete-config", "retention.ms")
    table = config_table(server.run("configs", "describe", *entity))
    assert table["retention.ms"] == ("604800000", "default")
    assert table["cleanup.policy"] == ("compact,delete", "topic")


def test_configs_of_a_group(server: Server) -> None:
    """Kafka 4.0's group configs (--entity-type groups); the group need not exist."""
    entity = ["--entity-type", "groups", "--entity-name", "cfg-group"]
    table = config_table(server.run("configs", "describe", *entity))
    assert table["consumer.session.timeout.ms"] == ("45000", "default")
    added = server.run(
        "configs", "alter", *entity, "--add-config", "consumer.session.timeout.ms=50000"
    )
    assert added.lines == ["Completed updating config for group cfg-group."]
    dynamic = config_table(server.run("configs", "describe", *entity, "--dynamic-only"))
    assert dynamic == {"consumer.session.timeout.ms": ("50000", "group")}
    refused = server.run(
        "configs", "alter", *entity, "--add-config", "consumer.session.timeout.ms=1", ok=False
    )
    assert "INVALID_CONFIG" in one_error(refused)


def test_configs_alter_refuses_an_invalid_value(server: Server) -> None:
    server.run("topics", "create", "cfg-strict", "--partitions", "1")
    result = server.run(
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg-strict",
        "--add-config",
        "retention.ms=soon",
        ok=False,
    )
    assert "INVALID_CONFIG" in one_error(result)


def test_configs_of_a_missing_topic(server: Server) -> None:
    result = server.run(
        "configs", "describe", "--entity-type", "topics", "--entity-name", "cfg-missing", ok=False
    )
    assert "UNKNOWN_TOPIC_OR_PART" in one_error(result)


@pytest.mark.parametrize(
    "action", [["describe"], ["alter", "--add-config", "log.cleaner.threads=2"]]
)
def test_configs_of_a_missing_broker_fail_at_once(server: Server, action: list[str]) -> None:
    started = time.monotonic()
    result = server.run(
        "configs", *action, "--entity-type", "brokers", "--entity-name", "7", ok=False
    )
    assert time.monotonic() - started < 10  # not a client timeout of 30 s
    assert result.returncode == 1
    assert result.error_lines == [f"Error: there is no broker 7 (brokers: {server.node_id})"]


def test_configs_describe_the_broker(server: Server) -> None:
    result = server.run(
        "configs", "describe", "--entity-type", "brokers", "--entity-name", str(server.node_id)
    )
    table = config_table(result)
    assert table["num.partitions"] == ("2", "static")  # --override of the server
    assert table["auto.create.topics.enable"] == ("true", "default")
    assert table["sasl.kerberos.min.time.before.relogin"] == ("60000", "default")
    assert set(table) == set(SERVER_SETTINGS)  # Kafka's whole catalog, secrets hidden


def test_configs_alter_a_kafka_setting_strom_only_records(server: Server) -> None:
    broker = str(server.node_id)
    setting = "sasl.kerberos.min.time.before.relogin"
    altered = server.run(
        "configs", "alter", "--entity-type", "brokers", "--entity-name", broker,
        "--add-config", f"{setting}=30000",
    )  # fmt: skip
    assert altered.lines == [f"Completed updating config for broker {broker}."]
    table = config_table(
        server.run("configs", "describe", "--entity-type", "brokers", "--entity-name", broker)
    )
    assert table[setting] == ("30000", "dynamic-broker")
    server.run(
        "configs", "alter", "--entity-type", "brokers", "--entity-name", broker,
        "--delete-config", setting,
    )  # fmt: skip


# --- produce and consume ----------------------------------------------------------------


def test_produce_keys_and_headers_then_consume_with_every_print_option(server: Server) -> None:
    server.run("topics", "create", "events", "--partitions", "1")
    before_ms = int(time.time() * 1000)
    produced = server.run(
        "produce",
        "events",
        "--key-separator",
        ":",
        "--header",
        "source=cli",
        "--header",
        "trace=a=b",
        input="k1:v1\nk2:v2 with spaces\nk3:v3:x\n",
    )
    assert (produced.stdout, produced.stderr) == ("", "")
    after_ms = int(time.time() * 1000)

    lines = consume_values(server, "events", 3, *PRINT_ALL)
    expected = [("k1", "v1"), ("k2", "v2 with spaces"), ("k3", "v3:x")]
    for offset, (line, (key, value)) in enumerate(zip(lines, expected, strict=True)):
        timestamp, *rest = line.split("\t")
        kind, millis = timestamp.split(":")
        assert kind == "CreateTime"
        assert before_ms - 1000 <= int(millis) <= after_ms + 1000
        assert rest == ["Partition:0", f"Offset:{offset}", "source:cli,trace:a=b", key, value]


def test_consume_prints_fields_with_the_key_separator(server: Server) -> None:
    server.run("topics", "create", "separated", "--partitions", "1")
    server.run("produce", "separated", "--key-separator", "=", input="k=v\n")
    server.run("produce", "separated", input="no key\n")
    lines = consume_values(
        server, "separated", 2, "--print-key", "--print-headers", "--key-separator", " | "
    )
    assert lines == ["NO_HEADERS | k | v", "NO_HEADERS | null | no key"]


def test_consume_max_messages_stops_early(server: Server) -> None:
    server.run("topics", "create", "many", "--partitions", "1")
    server.run("produce", "many", input="".join(f"m{i}\n" for i in range(10)))
    assert consume_values(server, "many", 4) == ["m0", "m1", "m2", "m3"]


def test_consume_by_partition_and_offset(server: Server) -> None:
    server.run("topics", "create", "spread", "--partitions", "3")
    server.run(
        "produce", "spread", "--partition", "2", input="".join(f"p2-{i}\n" for i in range(5))
    )
    server.run("produce", "spread", "--partition", "0", input="p0-0\n")

    from_one = server.run(
        "consume",
        "spread",
        "--partition",
        "2",
        "--offset",
        "1",
        "--max-messages",
        "2",
        "--print-offset",
        *SAFETY,
    )
    assert from_one.lines == ["Offset:1\tp2-1", "Offset:2\tp2-2"]

    earliest = server.run(
        "consume", "spread", "--partition", "2", "--offset", "earliest", "--timeout-ms", "3000"
    )
    assert earliest.lines == [f"p2-{i}" for i in range(5)]
    assert earliest.error_lines == ["Processed a total of 5 messages"]

    latest = server.run(
        "consume", "spread", "--partition", "2", "--offset", "latest", "--timeout-ms", "1500"
    )
    assert latest.lines == []
    assert latest.error_lines == ["Processed a total of 0 messages"]

    everything = server.run(
        "consume", "spread", "--from-beginning", "--max-messages", "6", "--print-partition", *SAFETY
    )
    assert sorted(everything.lines) == sorted(
        ["Partition:0\tp0-0", *(f"Partition:2\tp2-{i}" for i in range(5))]
    )

    # without --partition, --offset applies to every partition; partition 0 ends at 1
    from_three = server.run("consume", "spread", "--offset", "3", "--timeout-ms", "3000")
    assert from_three.lines == ["p2-3", "p2-4"]

    missing = server.run("consume", "spread", "--partition", "7", ok=False)
    assert one_error(missing) == "Error: topic 'spread' has no partition 7 (it has 3)"


def test_keyed_messages_land_where_java_clients_put_them(server: Server) -> None:
    server.run("topics", "create", "keyed", "--partitions", "3")
    keys = [f"key-{i}" for i in range(12)]
    server.run(
        "produce", "keyed", "--key-separator", ":", input="".join(f"{k}:value\n" for k in keys)
    )
    lines = consume_values(server, "keyed", len(keys), "--print-partition", "--print-key")
    placed = {}
    for line in lines:
        partition, key, _ = line.split("\t")
        placed[key] = int(partition.removeprefix("Partition:"))
    # kafka-python's murmur2 is a port of the Java client's Utils.murmur2
    assert placed == {key: (java_murmur2(key.encode()) & 0x7FFFFFFF) % 3 for key in keys}


def test_every_compression_and_acks(server: Server) -> None:
    server.run("topics", "create", "packed", "--partitions", "1")
    expected: list[str] = []
    for codec, acks in [
        ("none", "all"),
        ("gzip", "1"),
        ("snappy", "all"),
        ("lz4", "1"),
        ("zstd", "0"),
    ]:
        values = [f"{codec}-{i}-" + "x" * 200 for i in range(3)]
        server.run(
            "produce", "packed", "--compression", codec, "--acks", acks, input="\n".join(values)
        )
        expected += values
    assert consume_values(server, "packed", len(expected)) == expected


def test_binary_values_are_printed_with_replacement(server: Server) -> None:
    server.run("topics", "create", "binary", "--partitions", "1")
    server.run("produce", "binary", input=b"caf\xc3\xa9\n\xff\xfe\n")
    assert consume_values(server, "binary", 2) == ["caf\u00e9", "\ufffd\ufffd"]


def test_produce_reports_each_failed_line(server: Server) -> None:
    server.run(
        "topics", "create", "small", "--partitions", "1", "--config", "max.message.bytes=1000"
    )
    lines = ["a:ok-1", "b:" + "x" * 5000, "no separator here", "c:ok-2"]
    result = server.run(
        "produce",
        "small",
        "--key-separator",
        ":",
        "--property",
        "batch.num.messages=1",  # one message a batch: only the big one is refused
        input="\n".join(lines) + "\n",
        ok=False,
    )
    assert result.returncode == 1
    errors = result.error_lines
    assert len(errors) == 3, errors
    assert errors[-1] == "Error: 2 of 4 messages were not delivered"
    assert sorted(line.split(": ")[1] for line in errors[:2]) == ["line 2", "line 3"]
    assert any(line.startswith("Error: line 2: MSG_SIZE_TOO_LARGE") for line in errors)
    assert "Error: line 3: no key separator ':' found" in errors
    assert consume_values(server, "small", 2) == ["ok-1", "ok-2"]


def test_produce_says_why_a_compacted_topic_refuses_keyless_lines(server: Server) -> None:
    server.run("topics", "create", "compacted", "--config", "cleanup.policy=compact")
    result = server.run(
        "produce",
        "compacted",
        "--property",
        "batch.num.messages=1",
        input="keyless\n",
        ok=False,
    )
    assert result.error_lines == [
        "Error: line 1: INVALID_RECORD: Broker: Broker failed to validate record: topic "
        "'compacted' is compacted (cleanup.policy=compact) and takes only messages with a key: "
        "give keys with --key-separator",
        "Error: 1 of 1 messages were not delivered",
    ]
    server.run("produce", "compacted", "--key-separator", ":", input="k:keyed\n")
    assert consume_values(server, "compacted", 1) == ["keyed"]


def test_a_tls_client_is_told_the_listener_speaks_another_protocol(
    server: Server, tmp_path: Path
) -> None:
    config = tmp_path / "tls.properties"
    config.write_text("security.protocol=SSL\n")
    result = server.run("topics", "list", "--command-config", str(config), ok=False)
    assert one_error(result).startswith(
        f"Error: the listener at {server.bootstrap} speaks another protocol than "
        "security.protocol=SSL (no TLS server answered the handshake)"
    )


def test_produce_to_a_missing_partition(server: Server) -> None:
    server.run("topics", "create", "narrow", "--partitions", "1")
    result = server.run("produce", "narrow", "--partition", "9", input="x\n", ok=False)
    assert one_error(result) == "Error: topic 'narrow' has no partition 9 (it has 1)"


def test_produce_creates_a_missing_topic(server: Server) -> None:
    server.run("produce", "auto-created", input="hello\n")
    assert "auto-created" in server.run("topics", "list").lines
    assert consume_values(server, "auto-created", 1) == ["hello"]


def test_consume_a_missing_topic(server: Server) -> None:
    result = server.run("consume", "nowhere", "--timeout-ms", "1000", ok=False)
    assert one_error(result) == "Error: topic 'nowhere' does not exist"
    assert "nowhere" not in server.run("topics", "list").lines


def test_consume_read_committed(server: Server) -> None:
    server.run("topics", "create", "committed", "--partitions", "1")
    server.run("produce", "committed", input="plain\n")
    values = consume_values(server, "committed", 1, "--isolation-level", "read_committed")
    assert values == ["plain"]
