"""The metrics listener of a real ``strom server`` (and of a real cluster), scraped with httpx
and read with prometheus_client's parser while confluent-kafka produces and consumes; the
Grafana dashboard's queries checked against what a broker serves."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families
from strom_harness import StartServer, StromServer, start_strom_server, strom_command

from strom.testing import Cluster, unique_topic_name

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "strom.json"
TIMEOUT = 20.0
"""Seconds a test waits for a value to arrive (settable here, short by default)."""

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample the node serves: (name, labels) -> value."""
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def metrics_url(server: StromServer) -> str:
    line = server.wait_for_line(r"metrics: http://", timeout=5)
    found = re.search(r"metrics: (http://\S+)", line)
    assert found is not None, line
    return found.group(1)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds, failing after :data:`TIMEOUT`."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    base = tmp_path_factory.mktemp("strom")
    running = start_strom_server(
        data_dir=base / "data",
        cwd=base,
        overrides={
            "metrics.listener": "http://127.0.0.1:0",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "3",
        },
    )
    yield running
    running.stop(signal.SIGTERM)


def test_produce_and_consume_move_the_counters(server: StromServer) -> None:
    url = metrics_url(server)
    topic = unique_topic_name("metrics")
    before = scrape(url)
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 50})
    for index in range(300):
        producer.produce(topic, f"value-{index:04}".encode())
    assert producer.flush(15) == 0
    group = unique_topic_name("group")
    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + TIMEOUT
    while read < 100 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
    assert read == 100
    consumer.commit(offsets=[TopicPartition(topic, 0, 100)], asynchronous=False)
    consumer.close()

    after = scrape(url)
    in_topic = value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
    assert in_topic == 300
    total_in = "kafka_server_brokertopicmetrics_messagesin_total"
    assert value(after, total_in) - value(before, total_in) >= 300
    bytes_in = value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert bytes_in > 300 * len("value-0000")
    bytes_out = value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
    assert bytes_out > 100 * len("value-0000")

    def requests(samples: Samples, request: str) -> float:
        return sum(
            count
            for (name, labels), count in samples.items()
            if name == "kafka_network_requestmetrics_requests_total"
            and ("request", request) in labels
        )

    for request in ("Produce", "Fetch", "OffsetCommit", "JoinGroup", "Metadata"):
        assert requests(after, request) > requests(before, request), request
    produce_count = value(
        after, "kafka_network_requestmetrics_totaltimems_count", request="Produce"
    )
    assert produce_count == requests(after, "Produce")
    p99 = value(
        after, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.99"
    )
    assert p99 > 0

    # one standalone node: every partition here, led here, fully replicated
    partitions = value(after, "kafka_server_replicamanager_partitioncount")
    assert partitions >= 1 + 3  # the topic, __consumer_offsets
    assert value(after, "kafka_server_replicamanager_leadercount") == partitions
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_log_log_size", topic=topic, partition="0") >= bytes_in
    assert value(after, "kafka_log_log_logendoffset", topic=topic, partition="0") == 300
    partition = {"topic": topic, "partition": "0"}  # the topic's one partition: all its bytes
    assert value(after, "kafka_log_partition_bytesin_total", **partition) == bytes_in
    assert value(after, "kafka_log_partition_bytesout_total", **partition) == bytes_out
    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "kafka_controller_kafkacontroller_globalpartitioncount") == partitions
    assert value(after, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert value(after, "kafka_server_raftmetrics_current_leader") == 1
    assert value(after, "kafka_server_raftmetrics_high_watermark") > 0
    assert value(after, "kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1

    labels = {"consumergroup": group, "topic": topic, "partition": "0"}
    assert value(after, "kafka_consumergroup_current_offset", **labels) == 100
    assert value(after, "kafka_consumergroup_lag", **labels) == 200


def test_a_deleted_topic_leaves_the_topic_counters(server: StromServer) -> None:
    url = metrics_url(server)
    topic = unique_topic_name("deleted")
    producer = Producer({"bootstrap.servers": server.bootstrap})
    producer.produce(topic, b"one")
    assert producer.flush(15) == 0
    name = "kafka_server_brokertopicmetrics_messagesin_total"
    assert value(scrape(url), name, topic=topic) == 1
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=TIMEOUT)
    wait_until(
        lambda: (name, frozenset({("topic", topic)})) not in scrape(url),
        "the deleted topic's series to go",
    )
    assert not any(("topic", topic) in labels for _, labels in scrape(url))


def test_dashboard_queries_name_only_served_metrics(server: StromServer) -> None:
    """Every PromQL query of docs/grafana/strom.json names metrics this broker serves (after
    the traffic of the test before; run alone, it makes its own)."""
    url = metrics_url(server)
    if not any(name == "kafka_consumergroup_lag" for name, _ in scrape(url)):
        test_produce_and_consume_move_the_counters(server)
    served = {name for name, _ in scrape(url)}
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())
    ]
    assert len(queries) >= 20
    for query in queries:
        names = set(re.findall(r"\b(kafka_[a-z0-9_]+)", query))
        assert names, query
        assert names <= served, f"{query}: {sorted(names - served)} not served"


def test_bad_requests_are_answered_and_the_listener_serves_on(server: StromServer) -> None:
    url = metrics_url(server)
    base = url.removesuffix("/metrics")
    with httpx.Client(timeout=10) as client:
        missing = client.get(base + "/nothing")
        assert missing.status_code == 404
        posted = client.post(url, content=b"x=1")
        assert posted.status_code == 405
        assert posted.headers["allow"] == "GET, HEAD"
        head = client.head(url)
        assert head.status_code == 200 and head.content == b""
        assert client.get(url + "?name[]=x").status_code == 200  # a query string is ignored
    address = httpx.URL(url)
    with socket.create_connection((address.host, address.port or 80), timeout=10) as raw:
        raw.sendall(b"NOT HTTP\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400 ")
    assert httpx.get(url, timeout=10).status_code == 200


@pytest.mark.parametrize(
    "setting",
    ["127.0.0.1:9404", "https://127.0.0.1:9404", "http://127.0.0.1:99999", "http://:9404"],
)
def test_an_invalid_listener_setting_is_one_line_at_start(tmp_path: Path, setting: str) -> None:
    result = subprocess.run(
        [
            *strom_command(),
            "server",
            "--data-dir",
            str(tmp_path / "data"),
            "--listener",
            "127.0.0.1:0",
            "--override",
            f"metrics.listener={setting}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"strom server: metrics.listener: expected http://HOST:PORT "
        f"(e.g. http://127.0.0.1:9404), got {setting!r}"
    ]


def test_a_metrics_port_in_use_is_one_line_at_start(server: StromServer, tmp_path: Path) -> None:
    taken = metrics_url(server).removesuffix("/metrics")
    result = subprocess.run(
        [
            *strom_command(),
            "server",
            "--data-dir",
            str(tmp_path / "other"),
            "--listener",
            "127.0.0.1:0",
            "--override",
            f"metrics.listener={taken}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("strom server:")]
    assert lines == [
        f"strom server: cannot listen on metrics.listener {taken}: Address already in use"
    ]


def test_no_metrics_listener_by_default(start_server: StartServer) -> None:
    server = start_server()
    assert not any("metrics: http" in line for line in server.lines)


def test_strom_metrics_prints_a_table(server: StromServer, tmp_path: Path) -> None:
    url = metrics_url(server)
    result = subprocess.run(
        [*strom_command(), "metrics", "--url", url.removesuffix("/metrics"), "--match", "leader"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["Metric", "Labels", "Value"]
    assert ["kafka_server_raftmetrics_current_leader", "-", "1"] in rows
    assert all("leader" in row[0] for row in rows[1:])
    refused = subprocess.run(
        [*strom_command(), "metrics", "--url", "http://127.0.0.1:1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().startswith("Error: cannot reach http://127.0.0.1:1/metrics")


@pytest.mark.xdist_group("cluster")
def test_a_follower_down_shows_as_under_replicated_on_the_leader() -> None:
    """Two brokers, RF 2: the follower killed, the leader counts the partition under-replicated
    and an ISR shrink; back, an expansion and none under-replicated."""
    settings = {
        "replica.lag.time.max.ms": 1500,
        "replica.fetch.wait.max.ms": 200,
        "default.replication.factor": 2,
        "offsets.topic.replication.factor": 1,
    }
    with Cluster(brokers=2, controllers=1, config=settings, metrics=True) as cluster:
        topic = unique_topic_name("replicated")
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce(topic, b"first")
        assert producer.flush(15) == 0
        urls = {node_id: cluster.nodes[node_id].metrics_url for node_id in cluster.broker_ids}
        assert all(urls.values()), urls
        leader = producer.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
        follower = next(node_id for node_id in urls if node_id != leader)
        cluster.kill(follower)
        leader_url = str(urls[leader])
        wait_until(
            lambda: (
                value(scrape(leader_url), "kafka_server_replicamanager_underreplicatedpartitions")
                >= 1
            ),
            "the partition under-replicated on its leader",
        )
        assert value(scrape(leader_url), "kafka_server_replicamanager_isrshrinks_total") >= 1
        cluster.restart(follower)
        wait_until(
            lambda: (
                value(scrape(leader_url), "kafka_server_replicamanager_underreplicatedpartitions")
                == 0
            ),
            "the follower back in the ISR",
        )
        assert value(scrape(leader_url), "kafka_server_replicamanager_isrexpands_total") >= 1
