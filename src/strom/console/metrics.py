"""The console's throughput and latency (``/api/console/metrics``), from the nodes' metrics
listeners (``--metrics URL,URL``, Prometheus's text format, docs/metrics.md): the cluster's
records and bytes in and out so far (the page charts their rates between samples) and each
API's 99th percentile request time, with the samples of the last minutes kept by the console
(``History``), so that a page loaded again charts them at once. ``sample`` and ``History``
are the pure part."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final

import httpx
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.console.services import TIMEOUT_S
from strom.web.http import json_response

__all__ = ["History", "metrics_routes", "sample"]

TOTALS: Final = {
    "kafka_server_brokertopicmetrics_messagesin_total": "messages_in",
    "kafka_server_brokertopicmetrics_bytesin_total": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout_total": "bytes_out",
}
LATENCY: Final = "kafka_network_requestmetrics_totaltimems"
LATENCY_APIS: Final = ("Produce", "Fetch")
HISTORY_S: Final = 180.0
"""How far back the charts go."""
MIN_GAP_S: Final = 1.0
"""Samples closer together than this (several pages open) are kept once."""


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


class History:
    """The samples of the last ``window_s`` seconds, at least ``gap_s`` apart, oldest first."""

    def __init__(self, window_s: float = HISTORY_S, gap_s: float = MIN_GAP_S) -> None:
        self.window_s = window_s
        self.gap_s = gap_s
        self._samples: deque[dict[str, Any]] = deque()

    def add(self, at: float, found: dict[str, Any]) -> list[dict[str, Any]]:
        """Keep ``found`` (taken at ``at``, seconds since the epoch) unless the last sample is
        less than ``gap_s`` old; the samples kept, ``found`` last."""
        if not self._samples or at - self._samples[-1]["at"] >= self.gap_s:
            self._samples.append({"at": at, **found})
        else:
            self._samples[-1] = {"at": self._samples[-1]["at"], **found}
        while at - self._samples[0]["at"] > self.window_s:
            self._samples.popleft()
        return list(self._samples)


def metrics_routes(urls: Sequence[str]) -> list[Route]:
    history = History()

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
        latest = sample(texts)
        return json_response({"nodes": len(urls), "scraped": len(texts), "errors": errors,
                              **latest, "history": history.add(time.time(), latest)})  # fmt: skip

    return [Route("/api/console/metrics", metrics)] if urls else []
