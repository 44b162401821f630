"""Regenerate the screenshots of docs/console.md: ``.venv/bin/python docs/console_screenshots.py``.

Starts a 3-node local cluster (its metrics on), a schema registry and the console, gives it
something to show (topics with records, a consumer group behind by some records, a subject with
two versions), and saves each main page from headless
Chromium (Debian's ``chromium`` and ``chromium-driver``) into ``docs/images/``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from confluent_kafka.schema_registry import Schema

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from e2e.browser import headless_chromium

from strom.console.app import Console
from strom.console.services import Services
from strom.rest.settings import RestSettings
from strom.testing import Cluster
from strom.testing.registry import Registry

IMAGES = Path(__file__).parent / "images"
PAGES = {
    "console-cluster.png": "#/cluster",
    "console-topics.png": "#/topics",
    "console-topic.png": "#/topics/orders",
    "console-group.png": "#/groups/billing",
    "console-schema.png": "#/schemas/orders-value",
}


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    with Cluster(brokers=3, combined=True, metrics=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for name, partitions in (("orders", 3), ("payments", 6)):
            admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
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
        console = Console(settings, Services(registry=registry.url, metrics=scrapes))
        console.start()
        browser = headless_chromium()
        driver = next(browser)
        try:
            for image, page in PAGES.items():
                driver.get(f"{console.url}/{page}")
                time.sleep(5)  # two refreshes: the group page's chart has points
                driver.save_screenshot(str(IMAGES / image))
                print(f"wrote docs/images/{image}")
        finally:
            browser.close()
            consumer.close()
            console.stop()
            registry.stop()


if __name__ == "__main__":
    main()
