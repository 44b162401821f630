"""The REST proxy's v2 API against a real ``strom server``: produce in the binary and JSON
embedded formats (the content type names it), topic and broker metadata, and a consumer
instance's whole life (create, subscribe, read, commit, seek, assign, delete), as Confluent's
v2 clients drive it; records produced by confluent-kafka, and the errors v2 defines."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.testing import unique_topic_name

pytestmark = pytest.mark.timeout(120)

BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"
V2 = "application/vnd.kafka.v2+json"


@pytest.fixture(scope="module")
def proxy(rest_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=rest_url, timeout=30, headers={"Content-Type": V2}) as client:
        yield client


def _topic(bootstrap: str, partitions: int = 1) -> str:
    name = unique_topic_name("rest-v2")
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer came
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def _read(proxy: httpx.Client, instance: str, count: int, accept: str = BINARY) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        answer = proxy.get(f"{instance}/records", params={"timeout": 500},
                           headers={"Accept": accept})  # fmt: skip
        assert answer.status_code == 200, answer.text
        got += answer.json()
    return got


def test_binary_and_json_produce_answer_each_records_offset(
    proxy: httpx.Client, bootstrap: str
) -> None:
    name = _topic(bootstrap, 2)
    key, value = base64.b64encode(b"k").decode(), base64.b64encode(b"v").decode()
    records = {"records": [{"key": key, "value": value, "partition": 1}, {"value": value}]}
    answer = proxy.post(f"/topics/{name}", json=records, headers={"Content-Type": BINARY})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == V2
    body = answer.json()
    assert (body["key_schema_id"], body["value_schema_id"]) == (None, None)
    assert body["offsets"][0] == {"partition": 1, "offset": 0, "error_code": None, "error": None}
    one = {"records": [{"value": {"a": 1}}]}
    to_partition = proxy.post(
        f"/topics/{name}/partitions/0", json=one, headers={"Content-Type": JSON}
    )
    assert to_partition.json()["offsets"][0]["partition"] == 0
    described = proxy.get(f"/topics/{name}").json()
    assert [p["partition"] for p in described["partitions"]] == [0, 1]
    assert described["configs"]["cleanup.policy"] == "delete"
    assert name in proxy.get("/topics").json()
    assert proxy.get("/brokers").json()["brokers"]


def test_v2_errors(proxy: httpx.Client, bootstrap: str) -> None:
    name = _topic(bootstrap)
    cases = [
        (proxy.post(f"/topics/missing-{name}", json={"records": []},
                    headers={"Content-Type": BINARY}), 404, 40401),
        (proxy.post(f"/topics/{name}/partitions/9", json={"records": []},
                    headers={"Content-Type": BINARY}), 404, 40402),
        (proxy.post(f"/topics/{name}", json={"records": [{"value": {"a": 1}}]},
                    headers={"Content-Type": "application/vnd.kafka.avro.v2+json"}), 422, 42202),
        (proxy.post(f"/topics/{name}", json={"records": []},
                    headers={"Content-Type": "text/plain"}), 415, 415),
        (proxy.get("/consumers/g/instances/nobody/records"), 404, 40403),
    ]  # fmt: skip
    for answer, status, code in cases:
        assert (answer.status_code, answer.json()["error_code"]) == (status, code), answer.text


def test_a_consumer_instance_subscribes_reads_commits_and_seeks(
    proxy: httpx.Client, bootstrap: str
) -> None:
    name = _topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(5):
        producer.produce(name, f"v{n}".encode(), key=f"k{n}".encode())
    assert producer.flush(10) == 0
    group = unique_topic_name("rest-v2-group")
    created = proxy.post(f"/consumers/{group}", json={"name": "c1", "format": "binary",
                                                      "auto.offset.reset": "earliest",
                                                      "auto.commit.enable": "false"})  # fmt: skip
    assert created.status_code == 200, created.text
    instance = f"/consumers/{group}/instances/c1"
    assert created.json()["base_uri"].endswith(instance)
    again = proxy.post(f"/consumers/{group}", json={"name": "c1"})
    assert (again.status_code, again.json()["error_code"]) == (409, 40902)
    assert proxy.post(f"{instance}/subscription", json={"topics": [name]}).status_code == 204
    assert proxy.get(f"{instance}/subscription").json() == {"topics": [name]}
    records = _read(proxy, instance, 5)
    assert [base64.b64decode(r["value"]) for r in records] == [f"v{n}".encode() for n in range(5)]
    assert [(r["topic"], r["offset"]) for r in records] == [(name, n) for n in range(5)]
    mismatch = proxy.get(f"{instance}/records", headers={"Accept": JSON})
    assert (mismatch.status_code, mismatch.json()["error_code"]) == (406, 40601)
    offsets = {"offsets": [{"topic": name, "partition": 0, "offset": 3}]}
    assert proxy.post(f"{instance}/offsets", json=offsets).status_code == 200
    committed = proxy.request("GET", f"{instance}/offsets",
                              json={"partitions": [{"topic": name, "partition": 0}]})  # fmt: skip
    assert committed.json()["offsets"][0]["offset"] == 3
    assert proxy.delete(f"{instance}/subscription").status_code == 204
    partitions = {"partitions": [{"topic": name, "partition": 0}]}
    assert proxy.post(f"{instance}/assignments", json=partitions).status_code == 204
    assert proxy.get(f"{instance}/assignments").json() == partitions
    seek = {"offsets": [{"topic": name, "partition": 0, "offset": 4}]}
    _read(proxy, instance, 1)  # the assignment is in place once a read returns records
    sought = proxy.post(f"{instance}/positions", json=seek)
    assert sought.status_code == 204, sought.text
    [last] = _read(proxy, instance, 1)
    assert last["offset"] == 4
    assert proxy.delete(instance).status_code == 204
    assert proxy.get(f"{instance}/subscription").status_code == 404
