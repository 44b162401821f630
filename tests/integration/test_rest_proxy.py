"""The REST proxy (``strom.rest``) in front of a real ``strom server`` process, driven over
HTTP as Confluent REST Proxy's users drive it (httpx here, curl in docs/rest.md), its records
read back with confluent-kafka: v3's clusters, brokers, topics, partitions, configs, produce
(one record, a stream, a batch, registry formats), consumer groups with their lags, and the
errors its API defines."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from strom.rest.app import RestProxy
from strom.rest.settings import RestSettings
from strom.testing import unique_topic_name
from strom.testing.registry import Registry

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def proxy(rest_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=rest_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def cluster(proxy: httpx.Client) -> str:
    answer = proxy.get("/v3/clusters")
    assert answer.status_code == 200, answer.text
    [only] = answer.json()["data"]
    return f"/v3/clusters/{only['cluster_id']}"


def _create(proxy: httpx.Client, cluster: str, partitions: int = 3, **extra: Any) -> str:
    name = unique_topic_name("rest")
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 1, **extra}
    answer = proxy.post(f"{cluster}/topics", json=body)
    assert answer.status_code == 201, answer.text
    return name


def _records(bootstrap: str, topic: str, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message)
    finally:
        consumer.close()
    return got


def test_the_cluster_and_its_brokers(proxy: httpx.Client, cluster: str) -> None:
    described = proxy.get(cluster).json()
    assert described["kind"] == "KafkaCluster"
    assert described["metadata"]["resource_name"] == f"crn:///kafka={described['cluster_id']}"
    assert described["topics"]["related"].endswith(f"{cluster}/topics")
    brokers = proxy.get(f"{cluster}/brokers").json()
    assert brokers["kind"] == "KafkaBrokerList"
    [broker] = brokers["data"]
    assert broker["kind"] == "KafkaBroker" and isinstance(broker["port"], int)
    assert proxy.get(f"{cluster}/brokers/{broker['broker_id']}").json() == broker
    assert described["controller"]["related"].endswith(f"/brokers/{broker['broker_id']}")


def test_topics_are_created_described_grown_and_deleted(proxy: httpx.Client, cluster: str) -> None:
    name = _create(proxy, cluster, configs=[{"name": "cleanup.policy", "value": "compact"}])
    topic = proxy.get(f"{cluster}/topics/{name}").json()
    assert (topic["kind"], topic["partitions_count"], topic["replication_factor"]) == (
        "KafkaTopic", 3, 1,
    )  # fmt: skip
    assert topic["is_internal"] is False
    listed = {t["topic_name"] for t in proxy.get(f"{cluster}/topics").json()["data"]}
    assert name in listed
    partitions = proxy.get(f"{cluster}/topics/{name}/partitions").json()["data"]
    assert [p["partition_id"] for p in partitions] == [0, 1, 2]
    replicas = proxy.get(f"{cluster}/topics/{name}/partitions/0/replicas").json()["data"]
    assert [(r["is_leader"], r["is_in_sync"]) for r in replicas] == [(True, True)]
    grown = proxy.patch(f"{cluster}/topics/{name}", json={"partitions_count": 5})
    assert grown.status_code == 200 and grown.json()["partitions_count"] == 5
    again = proxy.post(f"{cluster}/topics", json={"topic_name": name, "partitions_count": 1})
    assert (again.status_code, again.json()["error_code"]) == (400, 40002)
    assert proxy.delete(f"{cluster}/topics/{name}").status_code == 204
    gone = proxy.get(f"{cluster}/topics/{name}")
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)


def test_topic_configs_are_read_set_and_reset(proxy: httpx.Client, cluster: str) -> None:
    name = _create(proxy, cluster, 1)
    configs = f"{cluster}/topics/{name}/configs"
    default = proxy.get(f"{configs}/retention.ms").json()
    assert (default["kind"], default["is_default"]) == ("KafkaTopicConfig", True)
    assert proxy.put(f"{configs}/retention.ms", json={"value": "60000"}).status_code == 204
    changed = proxy.get(f"{configs}/retention.ms").json()
    assert (changed["value"], changed["source"]) == ("60000", "DYNAMIC_TOPIC_CONFIG")
    batch = {"data": [{"name": "retention.ms", "operation": "DELETE"},
                      {"name": "max.message.bytes", "value": "100000"}]}  # fmt: skip
    assert proxy.post(f"{configs}:alter", json=batch).status_code == 204
    listed = {c["name"]: c for c in proxy.get(configs).json()["data"]}
    assert listed["retention.ms"]["is_default"] is True
    assert listed["max.message.bytes"]["value"] == "100000"
    bad = proxy.put(f"{configs}/retention.ms", json={"value": "soon"})
    assert (bad.status_code, bad.json()["error_code"]) == (400, 40002)


def test_one_record_is_produced_and_read_back(
    proxy: httpx.Client, cluster: str, bootstrap: str
) -> None:
    name = _create(proxy, cluster, 1)
    record = {
        "key": {"type": "STRING", "data": "k1"},
        "value": {"type": "JSON", "data": {"n": 1, "tags": ["a"]}},
        "headers": [{"name": "h", "value": base64.b64encode(b"v").decode()}],
        "timestamp": "2026-11-28T12:00:00.000Z",
    }
    answer = proxy.post(f"{cluster}/topics/{name}/records", json=record)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["error_code"], body["partition_id"], body["offset"]) == (200, 0, 0)
    assert body["timestamp"] == "2026-11-28T12:00:00.000Z"
    assert body["value"] == {"type": "JSON", "size": 20, "subject": None, "schema_id": None,
                             "schema_version": None}  # fmt: skip
    [message] = _records(bootstrap, name, 1)
    assert message.key() == b"k1"
    assert json.loads(message.value()) == {"n": 1, "tags": ["a"]}
    assert message.headers() == [("h", b"v")]
    assert message.timestamp()[1] == 1795867200000


def test_a_stream_of_records_gets_one_answer_each_in_order(
    proxy: httpx.Client, cluster: str, bootstrap: str
) -> None:
    name = _create(proxy, cluster, 1)

    def chunks() -> Iterator[bytes]:
        for n in range(200):
            value = base64.b64encode(f"v{n}".encode()).decode()
            record: dict[str, Any] = {"value": {"type": "BINARY", "data": value}}
            if n % 50 == 7:  # the general path (headers) amid batched plain records
                record["headers"] = [{"name": "n", "value": base64.b64encode(b"7").decode()}]
            yield json.dumps(record).encode()
        yield b'{"value": {"type": "BINARY", "data": "not base64!"}}'

    answer = proxy.post(f"{cluster}/topics/{name}/records", content=chunks())
    assert answer.status_code == 200
    replies = [json.loads(line) for line in answer.text.splitlines()]
    assert [r["offset"] for r in replies[:200]] == list(range(200))
    assert replies[200]["error_code"] == 400
    messages = _records(bootstrap, name, 200)
    assert [m.value() for m in messages] == [f"v{n}".encode() for n in range(200)]
    assert [n for n, m in enumerate(messages) if m.headers()] == [7, 57, 107, 157]


def test_a_batch_answers_each_entry(proxy: httpx.Client, cluster: str) -> None:
    name = _create(proxy, cluster, 2)
    entries = [
        {"id": "a", "value": {"type": "STRING", "data": "x"}, "partition_id": 1},
        {"id": "b", "value": {"type": "STRING", "data": 5}},
    ]
    answer = proxy.post(f"{cluster}/topics/{name}/records:batch", json={"entries": entries})
    assert answer.status_code == 207
    body = answer.json()
    assert [(s["id"], s["partition_id"]) for s in body["successes"]] == [("a", 1)]
    assert [(f["id"], f["error_code"]) for f in body["failures"]] == [("b", 400)]


def test_bad_produce_requests_get_the_proxys_errors(proxy: httpx.Client, cluster: str) -> None:
    name = _create(proxy, cluster, 1)
    records = f"{cluster}/topics/{name}/records"
    cases = [
        (proxy.post(records, content=b""), 422, 422),
        (proxy.post(records, content=b"{not json"), 400, 400),
        (proxy.post(records, json={"value": {"type": "BINARY", "data": "%%"}}), 400, 400),
        (proxy.post(records, json={"value": {"type": "XML", "data": "x"}}), 400, 400),
        (proxy.post(records, json={"partition_id": 7, "value": {"data": "eA=="}}), 404, 40402),
        (proxy.post(f"{cluster}/topics/nope-{name}/records", json={}), 404, 40403),
        (proxy.post(f"/v3/clusters/other/topics/{name}/records", json={}), 404, 404),
        (proxy.get("/v3/nothing-here"), 404, 404),
    ]
    for answer, status, code in cases:
        assert (answer.status_code, answer.json()["error_code"]) == (status, code), answer.text
    assert proxy.post(records, json={"value": {"data": "eA=="}}).status_code == 200


def test_registry_formats_are_framed_with_their_schema(bootstrap: str, registry: Registry) -> None:
    settings = RestSettings.from_properties({
        "bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0",
        "schema.registry.url": registry.url,
    })  # fmt: skip
    started = RestProxy(settings)
    started.start()
    schema = json.dumps({"type": "record", "name": "Pay", "namespace": "shop",
                         "fields": [{"name": "amount", "type": "int"}]})  # fmt: skip
    try:
        with httpx.Client(base_url=started.url, timeout=30) as client:
            cluster = f"/v3/clusters/{client.get('/v3/clusters').json()['data'][0]['cluster_id']}"
            name = _create(client, cluster, 1)
            record = {"value": {"type": "AVRO", "schema": schema, "data": {"amount": 7}}}
            first = client.post(f"{cluster}/topics/{name}/records", json=record).json()
            assert first["value"]["subject"] == f"{name}-value", first
            latest = {"value": {"type": "AVRO", "data": {"amount": 8}}}
            second = client.post(f"{cluster}/topics/{name}/records", json=latest).json()
            assert second["value"]["schema_id"] == first["value"]["schema_id"]
            assert second["value"]["schema_version"] == 1
            bad = {"value": {"type": "AVRO", "data": {"amount": "x"}}}
            wrong = client.post(f"{cluster}/topics/{name}/records", json=bad)
            assert (wrong.status_code, wrong.json()["error_code"]) == (400, 42207)
    finally:
        started.stop()
    values = [m.value() for m in _records(bootstrap, name, 2)]
    schema_id = first["value"]["schema_id"]
    assert [v[:5] for v in values] == [b"\0" + schema_id.to_bytes(4, "big")] * 2
    assert [v[5:] for v in values] == [b"\x0e", b"\x10"]  # Avro's zig-zag ints 7 and 8


def test_a_groups_lag_is_its_committed_offsets_behind_the_log_end(
    proxy: httpx.Client, cluster: str, bootstrap: str
) -> None:
    name = _create(proxy, cluster, 2)
    for n in range(10):
        record = {"partition_id": n % 2, "value": {"type": "STRING", "data": str(n)}}
        assert proxy.post(f"{cluster}/topics/{name}/records", json=record).status_code == 200
    group = unique_topic_name("rest-group")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "client.id": "lagging", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([name])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition(name, 0, 2), TopicPartition(name, 1, 5)],
                        asynchronous=False)  # fmt: skip
        described = proxy.get(f"{cluster}/consumer-groups/{group}").json()
        assert (described["kind"], described["state"]) == ("KafkaConsumerGroup", "STABLE")
        [member] = proxy.get(f"{cluster}/consumer-groups/{group}/consumers").json()["data"]
        assert member["client_id"] == "lagging"
        lags = proxy.get(f"{cluster}/consumer-groups/{group}/lags").json()["data"]
        assert [(lag["partition_id"], lag["current_offset"], lag["log_end_offset"], lag["lag"])
                for lag in lags] == [(0, 2, 5, 3), (1, 5, 5, 0)]  # fmt: skip
        assert {lag["consumer_id"] for lag in lags} == {member["consumer_id"]}
        summary = proxy.get(f"{cluster}/consumer-groups/{group}/lag-summary").json()
        assert (summary["total_lag"], summary["max_lag"], summary["max_lag_partition_id"]) == (
            3,
            3,
            0,
        )
        listed = proxy.get(f"{cluster}/consumer-groups").json()["data"]
        assert group in {g["consumer_group_id"] for g in listed}
    finally:
        consumer.close()
    missing = proxy.get(f"{cluster}/consumer-groups/nobody-{group}")
    assert missing.status_code == 404


def test_max_request_size_limits_a_body_and_each_record_of_a_stream(bootstrap: str) -> None:
    settings = RestSettings.from_properties({
        "bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0",
        "max.request.size": "2000",
    })  # fmt: skip
    started = RestProxy(settings)
    started.start()
    big = {"value": {"type": "STRING", "data": "x" * 3000}}
    small = json.dumps({"value": {"type": "STRING", "data": "y" * 100}}).encode()
    try:
        with httpx.Client(base_url=started.url, timeout=30) as client:
            cluster = f"/v3/clusters/{client.get('/v3/clusters').json()['data'][0]['cluster_id']}"
            name = _create(client, cluster, 1)
            records = f"{cluster}/topics/{name}/records"
            too_big = client.post(records, json=big)
            assert (too_big.status_code, too_big.json()["error_code"]) == (413, 413)
            # A stream longer than the limit is served whole: the limit is per record.
            stream = client.post(records, content=iter([small] * 100))
            replies = [json.loads(line) for line in stream.text.splitlines()]
            assert [r["offset"] for r in replies] == list(range(100))
            refused = client.post(records, content=iter([small, json.dumps(big).encode()]))
            ends = [json.loads(line)["error_code"] for line in refused.text.splitlines()]
            assert ends == [200, 413]
    finally:
        started.stop()
