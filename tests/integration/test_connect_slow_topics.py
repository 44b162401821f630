"""A Connect worker whose internal topics read slowly (a loaded machine, a broker that stalls)
keeps reading at start-up, as Kafka Connect's ``KafkaBasedLog`` does, instead of ending with
"Timed out waiting for the ... topic to be read to its end" (which ended a dedicated
MirrorMaker under load): against a real ``strom server``, with every status record taking
0.1 s to apply and ``worker.sync.timeout.ms`` at 200 ms, the worker starts, warns once a
read passes the timeout, and serves the connectors the topics hold; a status or a config whose
write cannot be read back in time is written again (the dedicated mirror's herder, alone).
No Spark: the connectors are STOPPED, or fail to start."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx
import pytest

from strom.connect.connectors.mirror.maker import MirrorMaker
from strom.connect.connectors.mirror.mm2config import MirrorMakerConfig
from strom.connect.herder import Herder
from strom.connect.state import ConfigState, StatusState
from strom.testing.connect import Connect

APPLY_S = 0.1
"""How long each status record takes to apply on the slow worker."""


def _no_spark() -> Any:
    raise AssertionError("these tests start no connector query")


def _sink(name: str) -> dict[str, Any]:
    config = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/none"}
    return {"name": name, "config": config, "initial_state": "STOPPED"}


def test_a_worker_starts_however_slowly_its_status_topic_reads(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    names = [f"c{i}" for i in range(5)]
    first = Connect(bootstrap, spark=_no_spark, heartbeat_interval_ms=200)
    with first:
        for name in names:
            answer = httpx.post(f"{first.url}/connectors", json=_sink(name), timeout=30)
            assert answer.status_code == 201, answer.text
    # the status topic now holds each connector's STOPPED and UNASSIGNED records, 2 s to apply
    applied = StatusState.apply

    def slowly(self: StatusState, key: str, value: Mapping[str, Any] | None) -> None:
        time.sleep(APPLY_S)
        applied(self, key, value)

    monkeypatch.setattr(StatusState, "apply", slowly)
    caplog.set_level(logging.WARNING, logger="strom.connect.topics")
    with Connect(bootstrap, spark=_no_spark, settings=first.settings, sync_timeout_ms=200) as again:
        warnings = [r.getMessage() for r in caplog.records if "still reading" in r.getMessage()]
        assert warnings, "no read passed worker.sync.timeout.ms: the test proves nothing"
        assert warnings[0].startswith(f"{first.settings.status_topic}: read up to"), warnings[0]
        assert httpx.get(f"{again.url}/connectors", timeout=30).json() == names
        status = httpx.get(f"{again.url}/connectors/c0/status", timeout=30).json()
        assert status["connector"]["state"] in {"STOPPED", "UNASSIGNED"}, status


def test_a_lone_herder_writes_again_a_status_that_timed_out(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The dedicated mirror's herder (alone, no group) writes its connectors' status as it
    starts: one that cannot be read back in time is written again later, and start returns."""
    first = Connect(bootstrap, spark=_no_spark, heartbeat_interval_ms=200)
    with first:
        answer = httpx.post(f"{first.url}/connectors", json=_sink("c0"), timeout=30)
        assert answer.status_code == 201, answer.text
    delay = [0.4]  # longer than worker.sync.timeout.ms, until the herder has started
    applied = StatusState.apply

    def slowly(self: StatusState, key: str, value: Mapping[str, Any] | None) -> None:
        time.sleep(delay[0])
        applied(self, key, value)

    monkeypatch.setattr(StatusState, "apply", slowly)
    monkeypatch.setattr("strom.connect.herder.RETRY_S", 0.5)
    caplog.set_level(logging.WARNING, logger="strom.connect.herder")
    settings = replace(first.settings, sync_timeout_ms=200)
    herder = Herder(settings, worker_id="lone", spark=_no_spark)
    herder.start()
    try:
        assert any("again in 0.5 s" in r.getMessage() for r in caplog.records), caplog.text
        delay[0] = 0.0
        deadline = time.monotonic() + 30
        while herder.status("c0")["connector"] != {"state": "STOPPED", "worker_id": "lone"}:
            assert time.monotonic() < deadline, herder.status("c0")
            time.sleep(0.2)
    finally:
        herder.stop()


def test_the_dedicated_mirror_puts_again_a_config_that_timed_out(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``strom mirror``'s start puts its connectors' configs into its config topic: while the
    topic reads too slowly to see them back it puts them again, and starts once it can."""
    config = MirrorMakerConfig.of(
        {
            "clusters": "A, B",
            "A.bootstrap.servers": bootstrap,
            "B.bootstrap.servers": bootstrap,
            "A->B.enabled": "true",
            "A->B.topics": "nothing-here",
            "emit.heartbeats.enabled": "false",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "worker.sync.timeout.ms": "200",
        }
    )
    delay = [0.4]  # longer than worker.sync.timeout.ms, until a config is put again
    applied = ConfigState.apply

    def slowly(self: ConfigState, key: str, value: Mapping[str, Any] | None) -> None:
        time.sleep(delay[0])
        applied(self, key, value)

    class PutAgain(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "putting its config again" in record.getMessage():
                delay[0] = 0.0

    monkeypatch.setattr(ConfigState, "apply", slowly)
    maker_log = logging.getLogger("strom.connect.connectors.mirror.maker")
    handler = PutAgain()
    maker_log.addHandler(handler)
    caplog.set_level(logging.WARNING, logger=maker_log.name)
    maker = MirrorMaker(config, spark=_no_spark)  # its connectors fail without Spark: no matter
    try:
        maker.start()
        assert "putting its config again" in caplog.text
        [flow] = maker.flows
        names = [c["name"] for c in config.connectors(flow)]
        assert maker.herders[flow.name].connector_names() == sorted(names)
    finally:
        maker.stop()
        maker_log.removeHandler(handler)
