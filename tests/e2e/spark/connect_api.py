"""The Connect tests' steps over the REST API (httpx, as any Connect client): create a
connector, read its states, wait for something to be so."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

import httpx

WAIT_S = float(os.environ.get("CONNECT_TEST_WAIT_S", "90"))
T = TypeVar("T")


def eventually(
    check: Callable[[], T | None], what: str, *, within: float = WAIT_S, every: float = 0.3
) -> T:
    """``check()``'s first truthy answer, polled every ``every`` seconds for up to ``within``."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"no {what} within {within}s (last: {found!r})"
        time.sleep(every)


def create(api: httpx.Client, name: str, config: dict[str, str]) -> None:
    answer = api.post("/connectors", json={"name": name, "config": config})
    assert answer.status_code == 201, answer.text


def states(api: httpx.Client, name: str) -> tuple[str, list[str]]:
    status = api.get(f"/connectors/{name}/status").json()
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def failed(api: httpx.Client, name: str) -> Callable[[], bool]:
    return lambda: states(api, name) == ("RUNNING", ["FAILED"])
