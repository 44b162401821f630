"""The injectable faults of a server process: the link fault and the JSON file that sets them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from strom.protocol.api import ApiKey
from strom.server.network.faults import Faults, LinkFault
from strom.server.network.faults_file import (
    FAULTS_FILE_ENV,
    FaultsSpec,
    faults_from_environment,
    parse_faults,
)


def test_a_link_fault_hits_only_the_clients_it_names() -> None:
    faults = Faults()
    faults.degrade_link(LinkFault(delay=0.25, loss=1.0, client_id_prefix="strom-"))
    assert faults.link_fault(ApiKey.FETCH, "strom-replica-fetcher-2") == (0.25, True)
    assert faults.link_fault(ApiKey.FETCH, "my-app") == (0.0, False)
    was_active = faults.active
    faults.clear()
    assert was_active and not faults.active
    assert faults.link_fault(ApiKey.FETCH, "strom-replica-fetcher-2") == (0.0, False)


def test_a_link_fault_can_hit_only_some_apis() -> None:
    faults = Faults()
    faults.degrade_link(LinkFault(delay=0.1, apis=frozenset({ApiKey.PRODUCE})))
    assert faults.link_fault(ApiKey.PRODUCE, "app") == (0.1, False)
    assert faults.link_fault(ApiKey.METADATA, "app") == (0.0, False)


def test_losses_follow_the_seed_and_the_probability() -> None:
    def losses(seed: int) -> list[bool]:
        faults = Faults()
        faults.degrade_link(LinkFault(loss=0.3), seed=seed)
        return [faults.link_fault(ApiKey.PRODUCE, "any")[1] for _ in range(2000)]

    assert losses(7) == losses(7)
    assert losses(7) != losses(8)
    assert 0.25 < sum(losses(7)) / 2000 < 0.35


@pytest.mark.parametrize(
    ("delay", "loss"), [(-1.0, 0.0), (0.0, 1.5), (0.0, -0.1)], ids=["delay<0", "loss>1", "loss<0"]
)
def test_impossible_link_faults_are_refused(delay: float, loss: float) -> None:
    with pytest.raises(ValueError):
        LinkFault(delay=delay, loss=loss)


def test_the_file_format() -> None:
    spec = parse_faults(
        '{"delays": {"Fetch": 0.2, "produce": 1}, '
        '"link": {"delay": 0.1, "loss": 0.05, "client_id_prefix": "strom-", "apis": ["Fetch"]}, '
        '"seed": 3}'
    )
    assert spec == FaultsSpec(
        delays={ApiKey.FETCH: 0.2, ApiKey.PRODUCE: 1.0},
        link=LinkFault(
            delay=0.1, loss=0.05, client_id_prefix="strom-", apis=frozenset({ApiKey.FETCH})
        ),
        seed=3,
    )
    assert parse_faults("") == parse_faults("  \n") == parse_faults("{}") == FaultsSpec()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "JSON object"),
        ('{"delay": {}}', "unknown keys"),
        ('{"delays": {"Nope": 1}}', "unknown Kafka API"),
        ('{"delays": {"Fetch": "1"}}', "delays.Fetch must be a number"),
        ('{"link": {"loss": true}}', "link.loss must be a number"),
        ('{"link": {"loss": 2}}', "probability"),
        ('{"link": {"client_id_prefix": 1}}', "client_id_prefix"),
        ('{"link": {"apis": "Fetch"}}', "list of API names"),
        ('{"link": {"apis": ["Fetchh"]}}', "unknown Kafka API"),
        ('{"seed": 1.5}', "seed"),
    ],
)
def test_a_bad_file_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_faults(text)


def test_applying_a_spec_replaces_the_faults() -> None:
    faults = Faults()
    faults.delay("Produce", 1.0)
    parse_faults('{"delays": {"Fetch": 0.5}}').apply(faults)
    assert faults.delay_for(ApiKey.FETCH) == 0.5
    assert faults.delay_for(ApiKey.PRODUCE) == 0.0
    FaultsSpec().apply(faults)
    assert not faults.active


def test_a_process_watches_the_file_its_environment_names(tmp_path: Path) -> None:
    assert faults_from_environment({}) is None
    path = tmp_path / "faults.json"
    faults = faults_from_environment({FAULTS_FILE_ENV: str(path)})
    assert faults is not None and not faults.active

    def becomes(active: bool) -> None:
        deadline = time.monotonic() + 5
        while faults.active != active:
            assert time.monotonic() < deadline, f"the faults never became active={active}"
            time.sleep(0.02)

    path.write_text('{"link": {"delay": 0.3}}', encoding="utf-8")
    becomes(True)
    assert faults.link_fault(ApiKey.FETCH, "anyone") == (0.3, False)
    path.write_text("not json", encoding="utf-8")  # ignored: the faults stay as they were
    time.sleep(0.3)
    assert faults.link_fault(ApiKey.FETCH, "anyone") == (0.3, False)
    path.unlink()
    becomes(False)
