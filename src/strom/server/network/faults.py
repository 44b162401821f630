"""Faults a test can inject into a running broker: slow or failing APIs, dropped and refused
connections, and a degraded link from some clients (driven through ``strom.testing``, or for a
server process through a file, :mod:`strom.server.network.faults_file`).

The network layer consults one ``Faults`` object per listener. With nothing set, the cost is
one attribute read per request (``active``) and per accepted connection (``refusing``). Every
method is safe to call from any thread: each one replaces a dictionary or a number at once,
and the event loop only ever reads them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.protocol.api import ApiKey, api_name

__all__ = ["Faults", "InjectedError", "LinkFault", "api_key_of"]


@dataclass(frozen=True, slots=True)
class InjectedError:
    """Answer the API with ``code`` for ``remaining`` more requests."""

    code: ErrorCode
    remaining: int


@dataclass(frozen=True, slots=True)
class LinkFault:
    """The link from clients whose id starts with ``client_id_prefix`` (every client when
    empty): each answer (to the ``apis`` named, or all) is held ``delay`` seconds, and lost
    with probability ``loss``.

    A lost answer closes the connection without it, after the request was served: over TCP a
    message is never lost alone, so lasting loss ends as a broken connection, and the client
    must send again without knowing whether the first request took effect."""

    delay: float = 0.0
    loss: float = 0.0
    client_id_prefix: str = ""
    apis: frozenset[ApiKey] | None = None

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError(f"a delay cannot be negative, got {self.delay}")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss is a probability from 0 to 1, got {self.loss}")


def api_key_of(api: ApiKey | int | str) -> ApiKey:
    """An API by key, or by its Kafka name ("Produce", "FindCoordinator"; any case)."""
    if isinstance(api, str):
        wanted = api.replace("_", "").lower()
        for key in ApiKey:
            if api_name(key).lower() == wanted:
                return key
        raise ValueError(f"unknown Kafka API {api!r}")
    return ApiKey(api)


class Faults:
    """What to do wrong, per API and per connection; every change applies to the next request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._delays: dict[ApiKey, float] = {}
        self._errors: dict[ApiKey, InjectedError] = {}
        self._refuse_until = 0.0
        self._link: LinkFault | None = None
        self._losses = random.Random()
        self._drop_hooks: list[Callable[[], None]] = []
        self.active = False
        """Whether any API fault is set (the per-request fast path reads only this)."""

    # --- set by tests ------------------------------------------------------------------------

    def delay(self, api: ApiKey | int | str, seconds: float) -> None:
        """Hold every response of ``api`` for ``seconds`` before it is sent."""
        if seconds < 0:
            raise ValueError(f"a delay cannot be negative, got {seconds}")
        with self._lock:
            self._delays = {**self._delays, api_key_of(api): seconds}
            self._update()

    def fail(
        self, api: ApiKey | int | str, error: ErrorCode | int | str, *, count: int = 1
    ) -> None:
        """Answer the next ``count`` requests of ``api`` with ``error`` in every error field."""
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        code = ErrorCode[error.lower()] if isinstance(error, str) else ErrorCode(error)
        with self._lock:
            self._errors = {**self._errors, api_key_of(api): InjectedError(code, count)}
            self._update()

    def degrade_link(self, link: LinkFault | None, *, seed: int | None = None) -> None:
        """Delay and lose the answers to the clients ``link`` names (None: a healthy link);
        ``seed`` makes which answers are lost repeatable."""
        with self._lock:
            self._link = link
            self._losses = random.Random(seed)
            self._update()

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Close new connections as soon as they are accepted, for ``seconds`` (None: until
        ``clear``). Connections already open are not affected."""
        self._refuse_until = float("inf") if seconds is None else time.monotonic() + seconds

    def drop_connections(self) -> None:
        """Close every open client connection now, as a network failure would."""
        for hook in list(self._drop_hooks):
            hook()

    def clear(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._delays = {}
            self._errors = {}
            self._refuse_until = 0.0
            self._link = None
            self._update()

    # --- read by the network layer -----------------------------------------------------------

    @property
    def refusing(self) -> bool:
        return self._refuse_until > 0.0 and time.monotonic() < self._refuse_until

    def delay_for(self, api_key: ApiKey) -> float:
        return self._delays.get(api_key, 0.0)

    def link_fault(self, api_key: ApiKey, client_id: str) -> tuple[float, bool]:
        """The delay of the answer to a request of ``api_key`` from ``client_id``, and whether
        it is lost."""
        link = self._link
        if (
            link is None
            or not client_id.startswith(link.client_id_prefix)
            or (link.apis is not None and api_key not in link.apis)
        ):
            return 0.0, False
        return link.delay, link.loss > 0 and self._losses.random() < link.loss

    def take_error(self, api_key: ApiKey) -> ErrorCode | None:
        """The error to answer this request of ``api_key`` with, if any (and count it)."""
        with self._lock:
            injected = self._errors.get(api_key)
            if injected is None:
                return None
            errors = dict(self._errors)
            if injected.remaining > 1:
                errors[api_key] = InjectedError(injected.code, injected.remaining - 1)
            else:
                del errors[api_key]
            self._errors = errors
            self._update()
            return injected.code

    def on_drop(self, hook: Callable[[], None]) -> None:
        """Register what ``drop_connections`` runs (the listener's, thread-safe on its side)."""
        self._drop_hooks.append(hook)

    def _update(self) -> None:
        self.active = bool(self._delays or self._errors or self._link)
