"""The console's SQL page in headless Chromium against a real SQL server (in the suite's one
SparkSession): a persistent query shows as RUNNING with its stream and its sink, and is
terminated from the page; a failed one shows as ERROR with its reason. The two tests share one
SQL server and console."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.browser import eventually
from e2e.spark.clients import admin, consume_all, unique_topic
from e2e.spark.sql_api import WAIT_S, ksql, query_states, serving
from e2e.spark.sql_api import eventually as sql_eventually
from strom.console.app import Console
from strom.console.services import Services
from strom.rest.settings import RestSettings

pytestmark = pytest.mark.timeout(300)  # a Spark query: slow when loaded


@pytest.fixture(scope="module")
def api(
    spark: SparkSession, broker: StromServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    state = tmp_path_factory.mktemp("console-sql") / "state"
    with serving(spark, broker.bootstrap, "console-sql", state) as client:
        yield client


@pytest.fixture(scope="module")
def console(broker: StromServer, api: httpx.Client) -> Iterator[str]:
    settings = RestSettings.from_properties(
        {"bootstrap.servers": broker.bootstrap, "listeners": "http://127.0.0.1:0"}
    )
    started = Console(settings, Services(sql=str(api.base_url)))
    started.start()
    yield started.url
    started.stop()


def _text(browser: Any, selector: str) -> str:
    from selenium.common.exceptions import WebDriverException  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    try:
        return str(browser.find_element(By.CSS_SELECTOR, selector).text)
    except WebDriverException:  # not on the page yet, or replaced by a refresh
        return ""


def test_a_query_shows_running_and_is_terminated_from_the_page(
    browser: Any, console: str, api: httpx.Client
) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    topic = unique_topic("console-sql")
    assert query_states(api) == {}
    ksql(
        api,
        "CREATE STREAM clicks (id STRING KEY, page STRING) "
        f"WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "CREATE STREAM home AS SELECT id, page FROM clicks WHERE page = 'home' EMIT CHANGES;",
    )
    [query_id] = query_states(api)
    browser.get(f"{console}/#/sql")
    row = f'#queries tr[data-query="{query_id}"]'
    eventually(lambda: "RUNNING" in _text(browser, row), seconds=WAIT_S,
               what=f"{query_id} RUNNING on the page, as {query_states(api)}")  # fmt: skip
    assert "HOME" in _text(browser, row)
    assert "STREAM" in _text(browser, '#sources tr[data-source="CLICKS"]')
    assert _text(browser, '#sources tr[data-source="HOME"]')
    assert browser.find_element(By.ID, "nav-sql").is_displayed()

    browser.find_element(By.CSS_SELECTOR, f'{row} button[data-terminate="{query_id}"]').click()
    eventually(lambda: f"terminated {query_id}" in _text(browser, "#query-result"),
               seconds=WAIT_S, what="the page's terminate answered")  # fmt: skip
    assert query_states(api) == {}
    eventually(lambda: not _text(browser, row), seconds=WAIT_S, what="the query gone from the page")


def test_a_failed_query_shows_as_error_with_its_reason(
    browser: Any, console: str, api: httpx.Client, broker: StromServer
) -> None:
    """Its source topic deleted once it has copied a row, the query fails: ERROR on the page,
    with the error that stopped it (it is retried meanwhile, ``ksql.query.retry.backoff.*``)."""
    source, sink = unique_topic("console-sql-gone"), unique_topic("console-sql-kept")
    ksql(
        api,
        f"CREATE STREAM gone (id STRING KEY, v INT) WITH (KAFKA_TOPIC='{source}', "
        "VALUE_FORMAT='JSON', PARTITIONS=1); INSERT INTO gone (id, v) VALUES ('a', 1);",
    )
    ksql(api, f"CREATE STREAM kept WITH (KAFKA_TOPIC='{sink}') AS SELECT id, v FROM gone;",
         **{"ksql.streams.auto.offset.reset": "earliest"})  # fmt: skip
    [query_id] = query_states(api)
    sql_eventually(lambda: consume_all(broker.bootstrap, sink), "the row copied")
    client = admin(broker.bootstrap)  # kept: a client collected at once fails its futures
    client.delete_topics([source])[source].result(15)
    browser.get(f"{console}/#/sql")
    row = f'#queries tr[data-query="{query_id}"]'
    eventually(lambda: "ERROR" in _text(browser, f"{row} td.state"), seconds=WAIT_S,
               what=f"{query_id} ERROR on the page, as {query_states(api)}")  # fmt: skip
    eventually(lambda: bool(_text(browser, f"{row} td.error")), seconds=WAIT_S,
               what="the query's error beside it")  # fmt: skip
    ksql(api, f"TERMINATE {query_id};")
