"""``strom metrics [--url URL] [--match TEXT]``: a node's metrics (its ``metrics.listener``) as a
table for a person at a terminal: one row a sample, its labels and its value."""

from __future__ import annotations

import math
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import click
from rich.table import Table

from strom.cli.client_common import ClientCommand, CliError, output_console

__all__ = ["metrics"]

DEFAULT_URL = "http://127.0.0.1:9404/metrics"


@click.command("metrics", cls=ClientCommand)
@click.option(
    "--url",
    default=DEFAULT_URL,
    show_default=True,
    help="The node's metrics listener (its metrics.listener; /metrics is added when missing).",
)
@click.option(
    "--match",
    "match",
    default="",
    metavar="TEXT",
    help="Only the metrics whose name contains TEXT (e.g. replicamanager, consumergroup_lag).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds to wait for the node's answer.",
)
def metrics(url: str, match: str, timeout: float) -> None:
    """Print a node's metrics (Prometheus's text format, scraped from its metrics listener) as
    a table.

    \b
    Examples:
      strom metrics --url http://127.0.0.1:9404
      strom metrics --url http://127.0.0.1:9404 --match brokertopicmetrics
    """
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415

    text = _scrape(_metrics_url(url), timeout)
    table = Table(box=None, pad_edge=False)
    for column in ("Metric", "Labels", "Value"):
        table.add_column(column, justify="right" if column == "Value" else "left")
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as error:
        raise CliError(f"{url} did not answer Prometheus's text format: {error}") from None
    for family in families:
        for sample in family.samples:
            if match and match not in sample.name:
                continue
            labels = ",".join(f"{name}={value}" for name, value in sorted(sample.labels.items()))
            table.add_row(sample.name, labels or "-", _number(sample.value))
    output_console().print(table)


def _metrics_url(url: str) -> str:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(f"--url: expected http://HOST:PORT, got {url!r}")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _scrape(url: str, timeout: float) -> str:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            body: bytes = answer.read()
    except urllib.error.HTTPError as error:
        raise CliError(f"{url} answered {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise CliError(f"cannot reach {url}: {reason}") from None
    return body.decode("utf-8", errors="replace")


def _number(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}" if abs(value) >= 1 else f"{value:.6g}"
