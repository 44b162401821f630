"""One request in flight per destination, timeouts and backoff (Kafka's ``RequestManager``).

A response counts only if it answers the request this manager still waits for (matched by
identity), so an answer that arrives after its timeout, or after the node changed role and
forgot its requests (:meth:`RequestManager.reset`), is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestManager"]


@dataclass(slots=True)
class _InFlight:
    request: object
    deadline_ms: int


class RequestManager:
    def __init__(self, *, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self._timeout = request_timeout_ms
        self._backoff = retry_backoff_ms
        self._in_flight: dict[int, _InFlight] = {}
        self._backoff_until: dict[int, int] = {}

    def ready(self, node: int, now_ms: int) -> bool:
        """Nothing in flight to ``node`` and no backoff running."""
        return node not in self._in_flight and self._backoff_until.get(node, 0) <= now_ms

    def sent(self, node: int, request: object, now_ms: int) -> None:
        self._in_flight[node] = _InFlight(request, now_ms + self._timeout)

    def received(self, node: int, request: object, now_ms: int, *, failed: bool) -> bool:
        """Whether ``request`` was the one awaited from ``node`` (else: ignore its answer).
        A failure starts the backoff."""
        waiting = self._in_flight.get(node)
        if waiting is None or waiting.request is not request:
            return False
        del self._in_flight[node]
        if failed:
            self.back_off(node, now_ms)
        return True

    def back_off(self, node: int, now_ms: int) -> None:
        self._backoff_until[node] = now_ms + self._backoff

    def expire(self, now_ms: int) -> list[int]:
        """The nodes whose request timed out (each now backing off). Backoffs that ran out are
        forgotten: a past one is no deadline to wake for (the poll loop would spin on it)."""
        for node in [node for node, until in self._backoff_until.items() if until <= now_ms]:
            del self._backoff_until[node]
        expired = [node for node, item in self._in_flight.items() if item.deadline_ms <= now_ms]
        for node in expired:
            del self._in_flight[node]
            self.back_off(node, now_ms)
        return expired

    def next_deadline_ms(self) -> int | None:
        deadlines = [item.deadline_ms for item in self._in_flight.values()]
        deadlines += list(self._backoff_until.values())
        return min(deadlines, default=None)

    def reset(self) -> None:
        """Forget every request (a new role sends its own)."""
        self._in_flight.clear()
        self._backoff_until.clear()
