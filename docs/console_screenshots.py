"""Regenerate the screenshots of docs/console.md: ``.venv/bin/python docs/console_screenshots.py``.

Starts a 3-node local cluster (its metrics on), a schema registry, a SQL server (in a local
SparkSession: Java needed) and the console, gives it something to show (topics with records, a
consumer group behind by some records, a subject with two versions, a persistent query and one
in ERROR), and saves each main page from headless Chromium (Debian's ``chromium`` and
``chromium-driver``) into ``docs/images/``; then the login page of a console with basic
authentication's users."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from confluent_kafka.schema_registry import Schema

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from e2e.browser import headless_chromium

import strom.spark
from strom.console.app import Console
from strom.console.services import Services
from strom.rest.settings import RestSettings
from strom.sql.server import SqlServer
from strom.sql.settings import SqlSettings
from strom.testing import Cluster
from strom.testing.registry import Registry
from strom.web.server import Listener

IMAGES = Path(__file__).parent / "images"
PAGES = {
    "console-cluster.png": "#/cluster",
    "console-topics.png": "#/topics",
    "console-topic.png": "#/topics/orders",
    "console-group.png": "#/groups/billing",
    "console-schema.png": "#/schemas/orders-value",
    "console-sql.png": "#/sql",
}


def create_topic(admin: AdminClient, name: str, partitions: int) -> None:
    try:
        admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    except KafkaException as error:  # a request retried on a loaded machine finds it made
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def sql_server(bootstrap: str, admin: AdminClient, state: Path) -> SqlServer:
    """A SQL server with a running query and one in ERROR (its source topic deleted)."""
    spark = strom.spark.session(master="local[2]", app_name="strom-screenshots",
                                conf={"spark.sql.shuffle.partitions": "2"})  # fmt: skip
    settings = SqlSettings(bootstrap_servers=bootstrap, service_id="screenshots_",
                           listener=Listener("http", "127.0.0.1", 0), state_dir=state,
                           sink_replicas=3, command_topic_replicas=3)  # fmt: skip
    server = SqlServer(settings, spark=lambda: spark)
    server.start()

    def ksql(text: str, **properties: str) -> None:
        body = {"ksql": text, "streamsProperties": properties}
        httpx.post(f"{server.url}/ksql", json=body, timeout=120).raise_for_status()

    ksql(
        "CREATE STREAM orders_raw (customer STRING KEY, `order` INT, qty INT) "
        "WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='JSON');"
        "CREATE STREAM big_orders AS SELECT customer, `order`, qty FROM orders_raw "
        "WHERE qty > 5 EMIT CHANGES;"
        "CREATE STREAM returns (id STRING KEY, reason STRING) "
        "WITH (KAFKA_TOPIC='returns', VALUE_FORMAT='JSON', PARTITIONS=1, REPLICAS=3);"
        "INSERT INTO returns (id, reason) VALUES ('r1', 'damaged');"
    )
    ksql("CREATE STREAM returns_copy AS SELECT id, reason FROM returns;",
         **{"ksql.streams.auto.offset.reset": "earliest"})  # fmt: skip
    copied = Consumer({"bootstrap.servers": bootstrap, "group.id": "screenshots",
                       "auto.offset.reset": "earliest"})  # fmt: skip
    copied.subscribe(["RETURNS_COPY"])
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and copied.poll(1.0) is None:
        pass  # until the query has copied the row: a query that read nothing does not fail
    copied.close()
    admin.delete_topics(["returns"])["returns"].result(30)  # its query fails: ERROR
    return server


def login_page(driver: Any, bootstrap: str, directory: Path) -> None:
    """The login page of a console whose listener asks basic authentication's users."""
    passwords = directory / "password.properties"
    passwords.write_text("ops: ops-secret,operator\n")
    jaas = directory / "jaas.conf"
    jaas.write_text("KafkaRest {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule "
                    f'required\n  file="{passwords}";\n}};\n')  # fmt: skip
    settings = RestSettings.from_properties(
        {"bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0",
         "authentication.method": "BASIC", "authentication.roles": "operator",
         "java.security.auth.login.config": str(jaas)},
        environ={},
    )  # fmt: skip
    console = Console(settings)
    console.start()
    try:
        driver.get(f"{console.url}/login")
        time.sleep(2)
        driver.save_screenshot(str(IMAGES / "console-login.png"))
        print("wrote docs/images/console-login.png")
    finally:
        console.stop()


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    with Cluster(brokers=3, combined=True, metrics=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for name, partitions in (("orders", 3), ("payments", 6)):
            create_topic(admin, name, partitions)
        producer = Producer({"bootstrap.servers": bootstrap})
        for n in range(300):
            producer.produce("orders", f'{{"order": {n}, "qty": {n % 7 + 1}}}'.encode(),
                             key=f"customer-{n % 12}".encode())  # fmt: skip
        producer.flush(30)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing"})
        consumer.commit(offsets=[TopicPartition("orders", p, 60) for p in range(3)],
                        asynchronous=False)  # fmt: skip
        registry = Registry(bootstrap)
        registry.start()
        fields = [{"name": "order", "type": "int"}, {"name": "qty", "type": "int"}]
        for version in (fields, [*fields, {"name": "note", "type": "string", "default": ""}]):
            schema = {"type": "record", "name": "Order", "fields": version}
            registry.client().register_schema("orders-value", Schema(json.dumps(schema), "AVRO"))
        settings = RestSettings.from_properties(
            {"bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0"}
        )
        scrapes = tuple(str(node.metrics_url) for node in cluster.nodes.values())
        scratch = Path(tempfile.mkdtemp(prefix="strom-screenshots-"))
        sql = sql_server(bootstrap, admin, scratch / "sql")
        services = Services(registry=registry.url, sql=sql.url, metrics=scrapes)
        console = Console(settings, services)
        console.start()
        browser = headless_chromium()
        driver = next(browser)
        try:
            for image, page in PAGES.items():
                driver.get(f"{console.url}/{page}")
                time.sleep(5)  # two refreshes: the group page's chart has points
                driver.save_screenshot(str(IMAGES / image))
                print(f"wrote docs/images/{image}")
            login_page(driver, bootstrap, scratch)
        finally:
            browser.close()
            consumer.close()
            console.stop()
            sql.stop()
            registry.stop()


if __name__ == "__main__":
    main()
