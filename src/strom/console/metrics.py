"""The console's throughput and latency (``/api/console/metrics``), from the nodes' metrics
listeners (``--metrics URL,URL``, Prometheus's text format, docs/metrics.md): the cluster's
records and bytes in and out so far (the page charts their rates between refreshes) and each
API's 99th percentile request time. ``sample`` is the pure part."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Final

import httpx
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.console.services import TIMEOUT_S
from strom.web.http import json_response

__all__ = ["metrics_routes", "sample"]

TOTALS: Final = {
    "kafka_server_brokertopicmetrics_messagesin_total": "messages_in",
    "kafka_server_brokertopicmetrics_bytesin_total": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout_total": "bytes_out",
}
LATENCY: Final = "kafka_network_requestmetrics_totaltimems"
LATENCY_APIS: Final = ("Produce", "Fetch")


def sample(texts: Iterable[str]) -> dict[str, object]:
    """The nodes' scrapes as one sample: the totals over every node (the all-topics series, no
    ``topic`` label), and per API the slowest node's 99th percentile in milliseconds."""
    totals = dict.fromkeys(TOTALS.values(), 0.0)
    latency: dict[str, float] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name in TOTALS and "topic" not in s.labels:
                    totals[TOTALS[s.name]] += s.value
                elif s.name == LATENCY and s.labels.get("quantile") == "0.99":
                    api = s.labels.get("request", "")
                    if api in LATENCY_APIS:
                        latency[api] = max(latency.get(api, 0.0), s.value)
    return {"totals": totals, "p99_ms": latency}


def metrics_routes(urls: Sequence[str]) -> list[Route]:
    async def scrape(client: httpx.AsyncClient, url: str) -> str:
        answer = await client.get(url)
        answer.raise_for_status()
        return answer.text

    async def metrics(request: Request) -> Response:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            found = await asyncio.gather(*(scrape(client, u) for u in urls), return_exceptions=True)
        texts = [t for t in found if isinstance(t, str)]
        errors = [f"{url}: {error}" for url, error in zip(urls, found, strict=True)
                  if isinstance(error, BaseException)]  # fmt: skip
        return json_response({"nodes": len(urls), "scraped": len(texts), "errors": errors,
                              **sample(texts)})  # fmt: skip

    return [Route("/api/console/metrics", metrics)] if urls else []
