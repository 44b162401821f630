"""The web console in a real browser (headless Chromium) against a real 3-node cluster: a
record produced in the page is consumed by confluent-kafka, a consumer group's lag grows and
shrinks on the page, a topic's setting is changed and reset, a group's offsets are reset after
a dry run (and not while it has members), and a killed broker shows as down with its partitions
under-replicated, each within seconds of happening."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from e2e.browser import eventually
from strom.console.app import Console
from strom.console.services import Services
from strom.rest.settings import RestSettings
from strom.testing import Cluster, unique_topic_name
from strom.testing.connect import Connect
from strom.testing.registry import Registry

pytestmark = [pytest.mark.timeout(240), pytest.mark.xdist_group("cluster")]

PAGE_S = 20.0
"""How long the page may take to show a change (it refreshes every two seconds)."""
WIDE = 510
"""Partitions of a group: more than the page's tables show (500)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, combined=True, metrics=True) as running:
        yield running


@pytest.fixture(scope="module")
def registry(cluster: Cluster) -> Iterator[Registry]:
    with Registry(cluster.bootstrap_servers) as running:
        yield running


def _no_spark() -> Any:
    raise RuntimeError("no Spark in the console's tests")


@pytest.fixture(scope="module")
def connect(cluster: Cluster) -> Iterator[Connect]:
    with Connect(cluster.bootstrap_servers, spark=_no_spark) as running:
        yield running


@pytest.fixture(scope="module")
def console(cluster: Cluster, registry: Registry, connect: Connect) -> Iterator[str]:
    settings = RestSettings.from_properties(
        {"bootstrap.servers": cluster.bootstrap_servers, "listeners": "http://127.0.0.1:0"}
    )
    scrapes = tuple(str(node.metrics_url) for node in cluster.nodes.values())
    started = Console(settings, Services(registry.url, connect.url, scrapes))
    started.start()
    yield started.url
    started.stop()


def _topic(cluster: Cluster, partitions: int = 3, **config: str) -> str:
    name = unique_topic_name("console")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 3, config=config)])[name].result(30)
    return name


def _text(browser: Any, selector: str) -> str:
    from selenium.common.exceptions import WebDriverException  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    try:
        return str(browser.find_element(By.CSS_SELECTOR, selector).text)
    except WebDriverException:  # not on the page yet, or replaced by a refresh
        return ""


def test_a_record_produced_in_the_page_is_consumed(
    browser: Any, console: str, cluster: Cluster
) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    name = _topic(cluster, 1)
    browser.get(f"{console}/#/topics/{name}")
    eventually(lambda: bool(_text(browser, "#partitions")), seconds=PAGE_S, what="the topic page")
    browser.find_element(By.ID, "produce-key").send_keys("k1")
    browser.find_element(By.ID, "produce-value").send_keys("made in the page")
    browser.find_element(By.ID, "produce-send").click()
    eventually(lambda: "offset 0" in _text(browser, "#produce-result"), seconds=PAGE_S,
               what="the page's produce answered")  # fmt: skip
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": name,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([name])
    try:
        message = None
        deadline = time.monotonic() + 30
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None
        assert (message.key(), message.value()) == (b"k1", b"made in the page")
    finally:
        consumer.close()
    eventually(lambda: "made in the page" in _text(browser, "#records"), seconds=PAGE_S,
               what="the record in the page's records")  # fmt: skip


def test_a_groups_lag_grows_and_shrinks_on_the_page(
    browser: Any, console: str, cluster: Cluster
) -> None:
    name = _topic(cluster, 1)
    group = unique_topic_name("console-group")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(20):
        producer.produce(name, str(n).encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.commit(offsets=[TopicPartition(name, 0, 5)], asynchronous=False)
        browser.get(f"{console}/#/groups/{group}")
        eventually(lambda: _text(browser, "#total-lag") == "15", seconds=PAGE_S,
                   what="a lag of 15")  # fmt: skip
        for n in range(10):
            producer.produce(name, str(n).encode())
        assert producer.flush(30) == 0
        eventually(lambda: _text(browser, "#total-lag") == "25", seconds=PAGE_S,
                   what="the lag grown to 25")  # fmt: skip
        consumer.commit(offsets=[TopicPartition(name, 0, 30)], asynchronous=False)
        eventually(lambda: _text(browser, "#total-lag") == "0", seconds=PAGE_S,
                   what="the lag back to 0")  # fmt: skip
        assert _text(browser, "#lag-chart") is not None
    finally:
        consumer.close()


def test_a_group_over_more_partitions_than_a_table_shows_lists_those_lagging_most(
    browser: Any, console: str, cluster: Cluster
) -> None:
    name = unique_topic_name("console-wide")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, WIDE, 1)])[name].result(60)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(3):
        producer.produce(name, str(n).encode(), partition=WIDE - 1)
    assert producer.flush(30) == 0
    group = unique_topic_name("console-wide-group")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.commit(offsets=[TopicPartition(name, p, 0) for p in range(WIDE)],
                        asynchronous=False)  # fmt: skip
    finally:
        consumer.close()
    browser.get(f"{console}/#/groups/{group}")
    eventually(lambda: _text(browser, "#total-lag") == "3", seconds=PAGE_S, what="a lag of 3")
    assert _text(browser, "#lags-shown") == f"the 500 of {WIDE} lagging most"
    rows = "return document.querySelectorAll('#lags tbody tr').length"
    assert browser.execute_script(rows) == 500
    first = browser.execute_script("return document.querySelector('#lags tbody tr').innerText")
    assert first.split() == [name, str(WIDE - 1), "0", "3", "3"]


def test_the_topics_page_shows_each_topics_partitions_and_records_held(
    browser: Any, console: str, cluster: Cluster
) -> None:
    name = _topic(cluster, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(7):
        producer.produce(name, str(n).encode(), partition=n % 3)
    assert producer.flush(30) == 0
    browser.get(f"{console}/#/topics")
    row = f'#topics tr[data-topic="{name}"]'
    eventually(lambda: _text(browser, f"{row} td.records") == "7", seconds=PAGE_S,
               what="7 records held, counted after the table's first paint")  # fmt: skip
    assert _text(browser, row).split()[1:3] == ["3", "3"]  # partitions, replication factor


def test_records_are_browsed_from_a_time(browser: Any, console: str, cluster: Cluster) -> None:
    name = _topic(cluster, 1)
    base = 1_700_000_000_000
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(10):
        producer.produce(name, f"r{n}".encode(), timestamp=base + n * 1000)
    assert producer.flush(30) == 0
    browser.get(f"{console}/#/topics/{name}")

    def first_offset() -> str:
        return _text(browser, "#records tbody tr td").strip()

    eventually(lambda: first_offset() == "0", seconds=PAGE_S, what="the records from offset 0")
    _fill(browser, "browse-time", str(base + 4000))
    eventually(lambda: first_offset() == "4", seconds=PAGE_S, what="the records from a time (ms)")
    assert _text(browser, "#browse-from") == "from offset 4"
    _fill(browser, "browse-time", "2023-11-14T22:13:26.5Z")  # base + 6500 ms
    eventually(lambda: first_offset() == "7", seconds=PAGE_S, what="the records from an ISO time")
    _fill(browser, "browse-time", "yesterday-ish")
    eventually(lambda: "not a time: yesterday-ish" in _text(browser, "#status.bad"),
               seconds=PAGE_S, what="a bad time as one line")  # fmt: skip


def _configs(cluster: Cluster, topic: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return dict(admin.describe_configs([resource])[resource].result(30))


def _fill(browser: Any, element_id: str, text: str) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    field = browser.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def _click(browser: Any, element_id: str) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    browser.find_element(By.ID, element_id).click()


def test_a_topic_setting_is_changed_and_reset_in_the_page(
    browser: Any, console: str, cluster: Cluster
) -> None:
    name = _topic(cluster, 1)
    browser.get(f"{console}/#/topics/{name}")
    eventually(lambda: bool(_text(browser, "#partitions")), seconds=PAGE_S, what="the topic page")
    _fill(browser, "config-name", "retention.ms")
    _fill(browser, "config-value", "3600000")
    _click(browser, "config-set")
    eventually(lambda: _text(browser, "#config-result") == "set retention.ms=3600000",
               seconds=PAGE_S, what="the setting changed")  # fmt: skip
    # the brokers learn of the change from the controller's log, so each may answer late
    eventually(lambda: _configs(cluster, name)["retention.ms"].value == "3600000",
               seconds=PAGE_S, what="the brokers' retention.ms")  # fmt: skip
    row = '#configs tr[data-config="retention.ms"]'
    eventually(lambda: "3600000" in _text(browser, row), seconds=PAGE_S, what="the new setting")

    _fill(browser, "config-value", "an hour")
    _click(browser, "config-set")
    eventually(lambda: "retention.ms" in _text(browser, "#config-result.bad"), seconds=PAGE_S,
               what="a bad value refused in one line")  # fmt: skip
    assert "\n" not in _text(browser, "#config-result")
    assert _configs(cluster, name)["retention.ms"].value == "3600000"

    _click(browser, "config-delete")
    eventually(lambda: "back to its default" in _text(browser, "#config-result"),
               seconds=PAGE_S, what="the setting reset")  # fmt: skip
    eventually(lambda: _configs(cluster, name)["retention.ms"].is_default, seconds=PAGE_S,
               what="the brokers' retention.ms back to its default")  # fmt: skip


def _committed(cluster: Cluster, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        [where] = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        return int(where.offset)
    finally:
        consumer.close()


def test_a_groups_offsets_are_reset_after_a_dry_run_and_not_while_it_is_active(
    browser: Any, console: str, cluster: Cluster
) -> None:
    from selenium.webdriver.support.ui import Select  # noqa: PLC0415

    name = _topic(cluster, 1)
    group = unique_topic_name("console-reset")
    base = 1_700_000_000_000
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(20):
        producer.produce(name, str(n).encode(), timestamp=base + n * 1000)
    assert producer.flush(30) == 0
    committer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    committer.commit(offsets=[TopicPartition(name, 0, 5)], asynchronous=False)
    committer.close()

    browser.get(f"{console}/#/groups/{group}")
    eventually(lambda: _text(browser, "#total-lag") == "15", seconds=PAGE_S, what="a lag of 15")
    Select(browser.find_element("id", "reset-to")).select_by_visible_text("earliest")
    _click(browser, "reset-preview")
    eventually(lambda: _text(browser, "#reset-plan .new-offset") == "0", seconds=PAGE_S,
               what="the dry run's plan")  # fmt: skip
    assert "not yet applied" in _text(browser, "#reset-result")
    assert _committed(cluster, group, name) == 5
    _click(browser, "reset-apply")
    eventually(lambda: _text(browser, "#total-lag") == "20", seconds=PAGE_S,
               what="the lag after the reset to earliest")  # fmt: skip
    assert _committed(cluster, group, name) == 0

    Select(browser.find_element("id", "reset-to")).select_by_visible_text("timestamp")
    _fill(browser, "reset-value", str(base + 7000))
    _click(browser, "reset-preview")
    eventually(lambda: _text(browser, "#reset-plan .new-offset") == "7", seconds=PAGE_S,
               what="the dry run to a timestamp")  # fmt: skip
    _click(browser, "reset-apply")
    eventually(lambda: _text(browser, "#total-lag") == "13", seconds=PAGE_S,
               what="the lag after the reset to a timestamp")  # fmt: skip
    assert _committed(cluster, group, name) == 7

    member = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                       "enable.auto.commit": False})  # fmt: skip
    try:
        member.subscribe([name])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        _click(browser, "reset-preview")
        eventually(lambda: "can only be reset if the group" in _text(browser, "#reset-result.bad"),
                   seconds=PAGE_S, what="the reset refused while the group is active")  # fmt: skip
        assert "current state is Stable" in _text(browser, "#reset-result")
    finally:
        member.close()
    assert _committed(cluster, group, name) == 7


def _order_schema(*fields: str) -> Any:
    from confluent_kafka.schema_registry import Schema  # noqa: PLC0415

    record = {"type": "record", "name": "Order", "fields": [
        {"name": f, "type": "string", "default": ""} for f in fields]}  # fmt: skip
    return Schema(json.dumps(record), "AVRO")


def test_a_subjects_versions_diff_and_compatibility_are_on_the_schemas_page(
    browser: Any, console: str, registry: Registry
) -> None:
    from selenium.webdriver.support.ui import Select  # noqa: PLC0415

    subject = unique_topic_name("orders") + "-value"
    client = registry.client()
    client.register_schema(subject, _order_schema("id"))
    client.register_schema(subject, _order_schema("id", "note"))
    client.set_compatibility(subject, "FULL")

    browser.get(f"{console}/#/schemas")
    row = f'#subjects tr[data-subject="{subject}"]'
    eventually(lambda: _text(browser, row).split()[1:2] == ["2"], seconds=PAGE_S,
               what="the subject at version 2")  # fmt: skip
    assert _text(browser, "#nav-schemas") == "Schemas"
    browser.get(f"{console}/#/schemas/{subject}")
    eventually(lambda: _text(browser, "#compatibility") == "FULL", seconds=PAGE_S,
               what="the subject's compatibility level")  # fmt: skip
    added = [e.text for e in browser.find_elements("css selector", "#schema-diff .added")]
    assert any('"name": "note"' in line for line in added)
    assert not browser.find_elements("css selector", "#schema-diff .removed")
    Select(browser.find_element("id", "diff-from")).select_by_visible_text("2")
    eventually(lambda: not _text(browser, "#schema-diff .added"), seconds=PAGE_S,
               what="no changes from version 2 to 2")  # fmt: skip

    browser.get(f"{console}/#/schemas/no-such-subject")
    missing = "schema registry: Subject 'no-such-subject' not found"
    eventually(lambda: missing in _text(browser, "#status"), seconds=PAGE_S,
               what="a missing subject as one line")  # fmt: skip
    assert "\n" not in _text(browser, "#status")


def test_connectors_are_paused_resumed_and_restarted_with_their_errors_on_the_page(
    browser: Any, console: str, connect: Connect
) -> None:
    name = unique_topic_name("files")
    config = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/none"}
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    created = httpx.post(f"{connect.url}/connectors", json=body, timeout=90)
    assert created.status_code == 201, created.text
    browser.get(f"{console}/#/connectors")
    row = f'#connectors tr[data-connector="{name}"]'
    eventually(lambda: _text(browser, f"{row} .state") == "STOPPED", seconds=PAGE_S,
               what="the connector stopped")  # fmt: skip
    assert _text(browser, "#nav-connectors") == "Connectors"

    def click(action: str) -> None:
        browser.find_element("css selector", f'{row} button[data-action="{action}"]').click()
        eventually(lambda: _text(browser, "#connector-result") == f"{action}: {name}",
                   seconds=PAGE_S, what=f"{action} done")  # fmt: skip

    def state() -> str:
        answer = httpx.get(f"{connect.url}/connectors/{name}/status", timeout=30)
        return str(answer.json()["connector"]["state"])

    click("pause")
    eventually(lambda: _text(browser, f"{row} .state") == "PAUSED", seconds=PAGE_S,
               what="the connector paused")  # fmt: skip
    assert state() == "PAUSED"
    click("resume")
    eventually(lambda: _text(browser, f"{row} .state") == "FAILED", seconds=PAGE_S,
               what="the connector failed to start")  # fmt: skip
    assert _text(browser, f"{row} .error") == "RuntimeError: no Spark in the console's tests"
    click("pause")
    eventually(lambda: state() == "PAUSED", seconds=PAGE_S, what="paused again")
    click("restart")
    assert "bad" not in browser.find_element("id", "connector-result").get_attribute("class")


def test_throughput_and_latency_from_the_nodes_metrics_are_charted(
    browser: Any, console: str, cluster: Cluster
) -> None:
    browser.get(f"{console}/#/cluster")
    eventually(lambda: _text(browser, "#messages-in-total").isdigit(), seconds=PAGE_S,
               what="the nodes' records in")  # fmt: skip
    before = int(_text(browser, "#messages-in-total"))
    name = _topic(cluster, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(300):
        producer.produce(name, str(n).encode())
    assert producer.flush(30) == 0
    eventually(lambda: int(_text(browser, "#messages-in-total") or 0) >= before + 300,
               seconds=PAGE_S, what="300 more records in")  # fmt: skip
    eventually(lambda: bool(browser.find_elements("id", "throughput-chart")), seconds=PAGE_S,
               what="the throughput chart")  # fmt: skip
    assert float(_text(browser, "#produce-p99")) >= 0
    assert "records/s" in _text(browser, "main")
    browser.refresh()  # the console kept the samples: the page loaded again charts them at once
    eventually(lambda: _text(browser, "#messages-in-total").isdigit(), seconds=PAGE_S,
               what="the cluster page loaded again")  # fmt: skip
    assert browser.find_elements("id", "throughput-chart")


def test_a_killed_broker_shows_as_down_with_its_partitions_under_replicated(
    browser: Any, console: str, cluster: Cluster
) -> None:
    strict = _topic(cluster, 3, **{"min.insync.replicas": "3"})
    browser.get(f"{console}/#/cluster")
    eventually(lambda: _text(browser, "#brokers-up") == "3 / 3", seconds=PAGE_S,
               what="three brokers up")  # fmt: skip
    victim = cluster.broker_ids[-1]
    cluster.kill(victim)
    row = f'#brokers tr[data-broker="{victim}"] .state'
    eventually(lambda: _text(browser, row) == "down", seconds=PAGE_S, what=f"broker {victim} down")
    eventually(lambda: int(_text(browser, "#under-replicated-count") or 0) > 0,
               seconds=PAGE_S, what="under-replicated partitions")  # fmt: skip
    assert "under-replicated" in _text(browser, "#problems")
    eventually(lambda: int(_text(browser, "#under-min-isr-count") or 0) > 0,
               seconds=PAGE_S, what="partitions under min ISR")  # fmt: skip
    assert f"{strict}-" in _text(browser, "#problems .under-min-isr")
    browser.get(f"{console}/#/topics")
    row = f'#topics tr[data-topic="{strict}"] .health'
    eventually(lambda: "under min ISR" in _text(browser, row), seconds=PAGE_S,
               what="the topic's partitions under min ISR")  # fmt: skip
