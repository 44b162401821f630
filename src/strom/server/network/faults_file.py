"""Faults for a server process, set from outside it through a JSON file (chaos tests).

A process started with ``STROM_FAULTS_FILE=PATH`` watches that file and applies what it holds
to its listeners' :class:`~strom.server.network.faults.Faults`, replacing whatever the file
held before (a missing or empty file is no fault)::

    {"delays": {"Fetch": 0.2},
     "link": {"delay": 0.1, "loss": 0.05, "client_id_prefix": "strom-replica-fetcher-",
              "apis": ["Fetch"]},
     "seed": 7}

``delays`` holds each named API's answers that many seconds; ``link`` degrades the answers to
the clients it names (to every API, or those in ``apis``; see
:class:`~strom.server.network.faults.LinkFault`), with ``seed`` making the losses repeatable.
A file that cannot be read or parsed is reported in the log and leaves the faults as they were.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from strom.protocol.api import ApiKey
from strom.server.network.faults import Faults, LinkFault, api_key_of

__all__ = ["FAULTS_FILE_ENV", "FaultsSpec", "faults_from_environment", "parse_faults"]

log = logging.getLogger(__name__)

FAULTS_FILE_ENV: Final = "STROM_FAULTS_FILE"
"""Environment variable naming the JSON file of a server process's injected faults."""

_RECHECK_SECONDS: Final = 0.1


@dataclass(frozen=True)
class FaultsSpec:
    """What a faults file asks for."""

    delays: Mapping[ApiKey, float] = field(default_factory=dict)
    link: LinkFault | None = None
    seed: int | None = None

    def apply(self, faults: Faults) -> None:
        """Make ``faults`` exactly this."""
        faults.clear()
        for api, seconds in self.delays.items():
            faults.delay(api, seconds)
        faults.degrade_link(self.link, seed=self.seed)


def parse_faults(text: str) -> FaultsSpec:
    """The faults a file's text asks for; raises ValueError for anything but the format in
    this module's docstring."""
    if not text.strip():
        return FaultsSpec()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(document, dict):
        raise ValueError("expected a JSON object")
    unknown = set(document) - {"delays", "link", "seed"}
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}; expected delays, link, seed")
    delays = {
        api_key_of(name): _number(seconds, f"delays.{name}")
        for name, seconds in _object(document.get("delays", {}), "delays").items()
    }
    link = None
    if "link" in document:
        entry = _object(document["link"], "link")
        prefix = entry.get("client_id_prefix", "")
        if not isinstance(prefix, str):
            raise ValueError("link.client_id_prefix must be a string")
        apis = entry.get("apis")
        if apis is not None and not (
            isinstance(apis, list) and all(isinstance(api, str) for api in apis)
        ):
            raise ValueError("link.apis must be a list of API names")
        link = LinkFault(
            delay=_number(entry.get("delay", 0), "link.delay"),
            loss=_number(entry.get("loss", 0), "link.loss"),
            client_id_prefix=prefix,
            apis=None if apis is None else frozenset(api_key_of(api) for api in apis),
        )
    seed = document.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError("seed must be an integer")
    return FaultsSpec(delays, link, seed)


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def faults_from_environment(environment: Mapping[str, str]) -> Faults | None:
    """The faults of a server process whose environment names a faults file (watched from a
    daemon thread from now on), else None."""
    path = environment.get(FAULTS_FILE_ENV)
    if not path:
        return None
    faults = Faults()
    threading.Thread(
        target=_watch, args=(Path(path), faults), daemon=True, name="strom-faults-file"
    ).start()
    log.warning("injected faults are read from %s (%s): for tests only", path, FAULTS_FILE_ENV)
    return faults


def _watch(path: Path, faults: Faults) -> None:
    seen: str | None = ""  # None: the file could not be read last time
    while True:
        time.sleep(_RECHECK_SECONDS)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        except OSError as error:
            if seen is not None:
                log.error("cannot read the faults file %s: %s", path, error)
            seen = None
            continue
        if text == seen:
            continue
        seen = text
        try:
            spec = parse_faults(text)
        except ValueError as error:
            log.error("ignoring the faults file %s: %s", path, error)
            continue
        spec.apply(faults)
        log.info("injected faults now: %s", text.strip() or "none")
