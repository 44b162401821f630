"""Serving an ASGI app: the listener (``listeners``' first entry, Kafka's and Confluent's
``http://host:port`` form), its socket bound at once (so a taken port fails the start with one
line, and port 0 gets a free one), uvicorn in the calling thread or a thread of its own, and a
graceful stop."""

from __future__ import annotations

import socket
import ssl
import threading
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

__all__ = ["HttpServer", "Listener"]

GRACEFUL_STOP_S = 2
"""How long a stop lets requests in flight finish."""


@dataclass(frozen=True)
class Listener:
    """Where a service listens: ``scheme`` is ``http`` or ``https``."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, listeners: str) -> Listener:
        """The first entry of a ``listeners`` value (``http://host:port,https://...``); an
        entry without a scheme is ``http``; an empty host is every interface."""
        entry = listeners.split(",", maxsplit=1)[0].strip()
        scheme, sep, address = entry.rpartition("://")
        host, colon, port = address.rpartition(":")
        scheme = scheme.lower() if sep else "http"
        if scheme not in ("http", "https") or not colon or not port.isdigit():
            raise ValueError(
                f"listeners: expected http://HOST:PORT or https://HOST:PORT, got {entry!r}"
            )
        return cls(scheme, host.strip("[]"), int(port))


class HttpServer:
    """A listener bound at once; ``url`` is where it answers (the ``advertised_url`` when
    given). ``start`` or ``serve`` serves an app on it."""

    def __init__(
        self,
        listener: Listener,
        *,
        ssl_context: ssl.SSLContext | None = None,
        advertised_url: str | None = None,
        name: str = "http",
    ) -> None:
        if (listener.scheme == "https") != (ssl_context is not None):
            raise ValueError(f"an {listener.scheme} listener needs TLS settings exactly when https")
        self._socket = socket.create_server((listener.host or "0.0.0.0", listener.port))
        self.port: int = self._socket.getsockname()[1]
        shown = "localhost" if listener.host in ("", "0.0.0.0") else listener.host
        self.url = advertised_url or f"{listener.scheme}://{shown}:{self.port}"
        self._name = name
        self._ssl_context = ssl_context
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: ASGIApp) -> None:
        """Serve ``app`` in a thread of its own."""
        self._thread = threading.Thread(
            target=self.serve, args=(app,), name=self._name, daemon=True
        )
        self._thread.start()

    def serve(self, app: ASGIApp) -> None:
        """Serve ``app`` in the calling thread until ``stop`` (or Ctrl-C)."""
        context = self._ssl_context
        self._uvicorn = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                ssl_context_factory=(lambda _config, _default: context)
                if context is not None
                else None,
                timeout_graceful_shutdown=GRACEFUL_STOP_S,
            )
        )
        self._uvicorn.run(sockets=[self._socket])

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()
