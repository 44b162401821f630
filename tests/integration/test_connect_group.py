"""Two Connect workers of one ``group.id`` against a real ``strom server``, without Spark (their
connectors are STOPPED, so no query runs): the group coordinator's membership (protocol type
``connect``) splits the connectors between them, in two rounds when the second joins; writes
are the leader's and the other worker forwards them (and refuses with Connect's 409 when told
not to forward); a worker that leaves hands its connectors to the other."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from strom.testing.connect import Connect

T = TypeVar("T")
WAIT_S = 30.0


def _no_spark() -> Any:
    raise AssertionError("these tests start no connector query")


def _eventually(check: Callable[[], T | None], what: str) -> T:
    deadline = time.monotonic() + WAIT_S
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S}s (last: {found!r})"
        time.sleep(0.2)


def _sink(name: str) -> dict[str, Any]:
    config = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/none"}
    return {"name": name, "config": config, "initial_state": "STOPPED"}


def _owners(url: str, names: list[str]) -> dict[str, str]:
    """Each connector's worker_id, as the status topic says (STOPPED by its owner)."""
    owners = {}
    for name in names:
        status = httpx.get(f"{url}/connectors/{name}/status", timeout=10).json()
        if status["connector"]["state"] == "STOPPED":
            owners[name] = status["connector"]["worker_id"]
    return owners


def _worker_id(worker: Connect) -> str:
    return worker.url.partition("://")[2]


def test_two_workers_share_the_connectors_and_forward_writes(bootstrap: str) -> None:
    names = [f"c{i}" for i in range(4)]
    a = Connect(bootstrap, spark=_no_spark, heartbeat_interval_ms=200)
    with a:
        for name in names:
            answer = httpx.post(f"{a.url}/connectors", json=_sink(name), timeout=30)
            assert answer.status_code == 201, answer.text
        alone = _owners(a.url, names)
        assert set(alone.values()) == {_worker_id(a)}
        b = Connect(bootstrap, spark=_no_spark, settings=a.settings)
        with b:
            workers = {_worker_id(a), _worker_id(b)}

            def split() -> dict[str, str] | None:
                owners = _owners(b.url, names)
                counts = [list(owners.values()).count(w) for w in workers]
                return owners if len(owners) == 4 and counts == [2, 2] else None

            owners = _eventually(split, "the connectors split two and two")
            assert set(owners.values()) == workers
            # librdkafka names the group's protocol type, Connect's
            admin = AdminClient({"bootstrap.servers": bootstrap})
            described = admin.describe_consumer_groups([a.settings.group_id])
            with pytest.raises(KafkaException, match=r"is not a consumer group \(connect\)"):
                described[a.settings.group_id].result(timeout=30)
            # a is the leader (it joined first): b forwards writes to it
            refused = httpx.put(f"{b.url}/connectors/c0/config?forward=false", json={})
            assert refused.status_code == 409
            assert refused.json()["message"].startswith("Cannot complete request because")
            config = {**_sink("c0")["config"], "file": "/tmp/other"}
            updated = httpx.put(f"{b.url}/connectors/c0/config", json=config, timeout=30)
            assert updated.status_code == 200, updated.text
            assert updated.json()["config"]["file"] == "/tmp/other"
            # read-your-writes on the worker that forwarded it
            assert httpx.get(f"{b.url}/connectors/c0/config").json()["file"] == "/tmp/other"
            created = httpx.post(f"{b.url}/connectors", json=_sink("c4"), timeout=30)
            assert created.status_code == 201, created.text
            assert _eventually(lambda: _owners(a.url, ["c4"]), "c4 assigned")
        # b left the group: a runs every connector again
        _eventually(
            lambda: (
                set(_owners(a.url, [*names, "c4"]).values()) == {_worker_id(a)}
                and len(_owners(a.url, [*names, "c4"])) == 5
            ),
            "every connector back on a",
        )
