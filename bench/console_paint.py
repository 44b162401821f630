"""The console's topics page with many partitions: the time from navigating to ``#/topics`` in
headless Chromium until its table is on the page (goal < 1 s with 10,000 partitions).

``--partitions`` partitions over ``--topics`` topics (replication factor 1) live in a
``strom server`` child process (``strom.testing.Broker``), or, where one broker cannot hold
them, a cluster of a controller and as many brokers as it takes (``strom.testing.Cluster``): a
partition keeps up to five files open, and where ``ulimit -n`` cannot be raised (a container
without CAP_SYS_RESOURCE) a broker holds at most ``(limit - 2048) / 5``. A console in this
process serves the page; Debian's ``chromium`` and
``chromium-driver`` load it ``--loads`` times (the first one warms the console's clients). Each
load's time is the page's own clock (``performance.now()``, from the navigation's start) when
the topics table appears (painted from the cluster's metadata), and when every topic's records
held are filled in (counted with ListOffsets after the paint), polled every 10 ms, ``--pause``
seconds apart; the console API's answer times (the topics, without and with ``?records=true``,
the cluster, a topic's partitions, the groups with one that has an offset on every partition,
and that group's lag) are printed beside them.

Run: ``.venv/bin/python -m bench.console_paint [--partitions 10000] [--topics 10] [--loads 5]``;
``--hold`` keeps the cluster up for runs with ``--bootstrap-servers`` (a before/after pair).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import resource
import shutil
import signal
import statistics
import sys
import time
from collections.abc import Iterator

import httpx
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.console.app import Console
from strom.rest.settings import RestSettings
from strom.testing import Broker, Cluster
from strom.testing.broker import TEST_DEFAULTS

FILES_PER_PARTITION = 5
"""Open files a partition of a broker keeps, as counted here (log, indexes, and the files of its
state): a broker handed 4,000 partitions under a limit of 20,000 ran out."""
GROUP = "paint-group"
"""A consumer group with an offset on every partition (the groups pages' lag)."""
TABLE_AT = "return document.querySelector('#topics tbody tr') ? performance.now() : null;"
FILLED_AT = (
    "const cells = [...document.querySelectorAll('#topics td.records')];"
    "return cells.length && cells.every((c) => c.textContent !== '\u2026')"
    " ? performance.now() : null;"
)


def chromium() -> object:
    from selenium import webdriver  # noqa: PLC0415 - only this bench needs it
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        raise SystemExit(
            "no chromium and chromium-driver (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=options)


def paint_ms(browser: object, url: str, timeout_s: float = 60.0) -> tuple[float, float]:
    """Load the topics page afresh; the page's times when its table appeared and when every
    topic's records held were filled in."""
    browser.get("about:blank")  # type: ignore[attr-defined]
    browser.get(url)  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout_s
    painted = None
    while time.monotonic() < deadline:
        if painted is None:
            painted = browser.execute_script(TABLE_AT)  # type: ignore[attr-defined]
        filled = browser.execute_script(FILLED_AT)  # type: ignore[attr-defined]
        if painted is not None and filled is not None:
            return float(painted), float(filled)
        time.sleep(0.01)
    raise SystemExit(f"the topics table was not filled within {timeout_s:.0f} s")


def answer_ms(client: httpx.Client, url: str, loads: int, pause_s: float) -> list[float]:
    answers = []
    for _ in range(loads):
        time.sleep(pause_s)
        begun = time.perf_counter()
        client.get(url).raise_for_status()
        answers.append((time.perf_counter() - begun) * 1000)
    return answers


def brokers_for(partitions: int) -> int:
    """How many brokers hold ``partitions`` within the open-file limit (raised to the hard
    limit first; each broker is a child process with the limit of its own)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return max(1, math.ceil(FILES_PER_PARTITION * partitions / (hard - 2048)))


@contextlib.contextmanager
def servers(brokers: int) -> Iterator[Broker | Cluster]:
    """One broker, or a cluster of ``brokers`` brokers and a controller."""
    if brokers == 1:
        with Broker(process=True, config={"offsets.topic.num.partitions": 1}) as broker:
            yield broker
        return
    config = {
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 1,
        # a broker handed 1,000 new partitions at once misses heartbeats for over 9 s here
        "broker.session.timeout.ms": 120_000,
    }
    with Cluster(brokers=brokers, controllers=1, config=config, defaults=TEST_DEFAULTS,
                 start_timeout=120) as cluster:  # fmt: skip
        yield cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument(
        "--pause", type=float, default=2.0, help="seconds between loads (default 2: longer"
        " than the console keeps a Metadata answer, so each load asks for one)",
    )  # fmt: skip
    parser.add_argument(
        "--bootstrap-servers",
        help="a running cluster to use (its paint-N topics made if missing) instead of starting"
        " one: a before/after pair runs against the same partitions",
    )
    parser.add_argument(
        "--hold", action="store_true", help="start the cluster, make the topics, print its"
        " bootstrap servers and keep it up until interrupted or killed (for --bootstrap-servers)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.bootstrap_servers:
        make_topics(args.bootstrap_servers, args.partitions, args.topics)
        measure(args.bootstrap_servers, args.loads, args.pause)
        return
    with servers(brokers_for(args.partitions)) as running:
        make_topics(running.bootstrap_servers, args.partitions, args.topics)
        if not args.hold:
            measure(running.bootstrap_servers, args.loads, args.pause)
            return
        print(f"--bootstrap-servers {running.bootstrap_servers}", flush=True)
        # Ctrl-C, or a kill (a background job ignores SIGINT): the cluster is stopped either way
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(60)


def make_topics(bootstrap_servers: str, partitions: int, topics: int) -> None:
    """The ``paint-N`` topics of ``partitions // topics`` partitions each, those not there, and
    the group ``GROUP`` with an offset committed on each of their partitions."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    per_topic = partitions // topics
    there = admin.list_topics(timeout=30).topics
    started = time.monotonic()
    for name in (f"paint-{index}" for index in range(topics)):
        if name not in there:
            topic = NewTopic(name, num_partitions=per_topic, replication_factor=1)
            admin.create_topics([topic], operation_timeout=300)[name].result(timeout=600)
    committed = [TopicPartition(f"paint-{index}", p, 0) for index in range(topics)
                 for p in range(per_topic)]  # fmt: skip
    changes = ConsumerGroupTopicPartitions(GROUP, committed)
    admin.alter_consumer_group_offsets([changes])[GROUP].result(timeout=120)
    print(f"{topics} topics of {per_topic} partitions ({topics * per_topic}) "
          f"ready in {time.monotonic() - started:.0f} s")  # fmt: skip


def measure(bootstrap_servers: str, loads: int, pause_s: float) -> None:
    """A console in this process over the cluster: its topics page loaded ``loads`` times,
    ``pause_s`` apart, and the answer times of the other pages' API."""
    settings = RestSettings.from_properties(
        {"bootstrap.servers": bootstrap_servers, "listeners": "http://127.0.0.1:0"}
    )
    console = Console(settings)
    console.start()
    browser = chromium()
    api = f"{console.url}/api/console"
    try:
        with httpx.Client(timeout=60) as client:
            answers = {
                what: answer_ms(client, f"{api}/{path}", loads, pause_s)
                for what, path in (
                    ("GET /api/console/topics", "topics"),
                    ("GET /api/console/topics?records=true", "topics?records=true"),
                    ("GET /api/console/cluster", "cluster"),
                    ("GET /api/console/topics/paint-0 (its partitions)", "topics/paint-0"),
                    (f"GET /api/console/groups ({GROUP} on every partition)", "groups"),
                    (f"GET /api/console/groups/{GROUP}", f"groups/{GROUP}"),
                )
            }
        paints = []
        for _ in range(loads):
            time.sleep(pause_s)
            paints.append(paint_ms(browser, f"{console.url}/#/topics"))
    finally:
        browser.quit()  # type: ignore[attr-defined]
        console.stop()
    answers["topics table painted (goal < 1000 ms)"] = [painted for painted, _ in paints]
    answers["records held filled in"] = [filled for _, filled in paints]
    for what, times in answers.items():
        print(f"{what}: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
              f"over {loads}")  # fmt: skip


if __name__ == "__main__":
    main()
