"""One registry instance: the state, the ``_schemas`` store that feeds it, and who is primary.
Reads answer from the local state; writes run on the primary only (the REST layer forwards them
there), one at a time, and return once the instance has applied its own records."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

from strom.registry.commands import Writes
from strom.registry.compatibility import CompatibilityLevel
from strom.registry.errors import RegistryError
from strom.registry.records import Record
from strom.registry.state import RegistryState
from strom.registry.store import SchemaStore

__all__ = ["Primary", "RegistryService"]

T = TypeVar("T")


class Primary(Protocol):
    """Who the primary is. ``primary_url`` is None for this instance, else the primary's URL;
    it waits a while for an election in progress, then raises ``RegistryError`` (50003)."""

    @property
    def is_primary(self) -> bool: ...

    def primary_url(self) -> str | None: ...

    def stop(self) -> None: ...


class _Alone:
    """A single instance that is always its own primary."""

    is_primary = True

    def primary_url(self) -> str | None:
        return None

    def stop(self) -> None:
        return


class RegistryService:
    """The state behind the REST API of one instance."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str = "_schemas",
        default_compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD,
        validate_defaults: bool = False,
        client_config: dict[str, object] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.state = RegistryState(
            default_compatibility=default_compatibility, validate_defaults=validate_defaults
        )
        self.lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.store = SchemaStore(
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            apply=self.state.apply,
            lock=self.lock,
            client_config=dict(client_config or {}),
            timeout=timeout,
        )
        self.primary: Primary = _Alone()
        self.ready = threading.Event()

    def start(self, primary: Primary | None = None) -> None:
        """Replay ``_schemas``, then serve; ``primary`` elects (default: always primary)."""
        self.store.start()
        if primary is not None:
            self.primary = primary
        self.ready.set()

    def stop(self) -> None:
        self.ready.clear()
        self.primary.stop()
        self.store.stop()

    def read(self, query: Callable[[RegistryState], T]) -> T:
        """Run a query against the state, under its lock."""
        with self.lock:
            return query(self.state)

    def write(self, command: Callable[[Writes], tuple[T, list[Record] | tuple[Record, ...]]]) -> T:
        """Plan a write against the up-to-date state and carry it out (primary only)."""
        if not self.primary.is_primary:
            raise RegistryError.forwarding("This instance is not the primary")
        with self._write_lock:
            self.store.catch_up()
            with self.lock:
                result, records = command(Writes(self.state))
            if records:
                self.store.write_records(records)
            return result
