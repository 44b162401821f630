"""The console's topics page with many partitions: the time from navigating to ``#/topics`` in
headless Chromium until its table is on the page (goal < 1 s with 10,000 partitions).

A ``strom server`` child process (``strom.testing.Broker``) holds ``--partitions`` partitions
over ``--topics`` topics (a partition keeps three files open: where ``ulimit -n`` cannot be
raised for them, the broker gets the partitions the limit allows, as ``bench.metrics_cost``
does); a console in this process serves the page; Debian's ``chromium`` and
``chromium-driver`` load it ``--loads`` times (the first one warms the console's clients). Each
load's time is the page's own clock (``performance.now()``, from the navigation's start) when
the topics table appears, polled every 10 ms; the console API's answer time
(``GET /api/console/topics``) is printed beside it.

Run: ``.venv/bin/python -m bench.console_paint [--partitions 10000] [--topics 10] [--loads 5]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

import httpx
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from bench.metrics_cost import open_files_for
from strom.console.app import Console
from strom.rest.settings import RestSettings
from strom.testing import Broker

TABLE_AT = "return document.querySelector('#topics tbody tr') ? performance.now() : null;"


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


def paint_ms(browser: object, url: str, timeout_s: float = 60.0) -> float:
    """Load the topics page afresh; the page's time when its table appeared."""
    browser.get("about:blank")  # type: ignore[attr-defined]
    browser.get(url)  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = browser.execute_script(TABLE_AT)  # type: ignore[attr-defined]
        if found is not None:
            return float(found)
        time.sleep(0.01)
    raise SystemExit(f"the topics table did not appear within {timeout_s:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    partitions = open_files_for(args.partitions)
    per_topic = partitions // args.topics
    with Broker(process=True, config={"offsets.topic.num.partitions": 1}) as running:
        admin = AdminClient(running.admin_config())
        started = time.monotonic()
        for index in range(args.topics):
            name = f"paint-{index}"
            futures = admin.create_topics([NewTopic(name, num_partitions=per_topic)],
                                          operation_timeout=300)  # fmt: skip
            futures[name].result(timeout=600)
        print(f"{args.topics} topics of {per_topic} partitions ({args.topics * per_topic}) "
              f"created in {time.monotonic() - started:.0f} s")  # fmt: skip
        settings = RestSettings.from_properties(
            {"bootstrap.servers": running.bootstrap_servers, "listeners": "http://127.0.0.1:0"}
        )
        console = Console(settings)
        console.start()
        browser = chromium()
        try:
            with httpx.Client(timeout=60) as client:
                answers = []
                for _ in range(args.loads):
                    begun = time.perf_counter()
                    client.get(f"{console.url}/api/console/topics").raise_for_status()
                    answers.append((time.perf_counter() - begun) * 1000)
            paints = [paint_ms(browser, f"{console.url}/#/topics") for _ in range(args.loads)]
        finally:
            browser.quit()  # type: ignore[attr-defined]
            console.stop()
    print(f"GET /api/console/topics: median {statistics.median(answers):.0f} ms, "
          f"max {max(answers):.0f} ms over {args.loads}")  # fmt: skip
    print(f"topics table painted: median {statistics.median(paints):.0f} ms, "
          f"max {max(paints):.0f} ms over {args.loads} loads (goal < 1000 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
