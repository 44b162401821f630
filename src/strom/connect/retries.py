"""Kafka Connect's retries of a connector's transient failures (no I/O): ``errors.retry.timeout``
(how long, in ms, a failing connector is started again; 0 never, -1 until it works) and
``errors.retry.delay.max.ms`` (the most it waits between attempts; the wait starts at
``FIRST_DELAY_MS`` and doubles). A failure is transient when the connector's plugin says so
(``ConnectorPlugin.retriable``: a database or cluster it cannot reach). Once the timeout has
passed the failure is the task's, as any other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_DELAY_MAX_MS", "FIRST_DELAY_MS", "WAIT_DELAY_MAX_MS", "RetryPolicy"]

FIRST_DELAY_MS = 1000
DEFAULT_DELAY_MAX_MS = 60_000
"""Kafka's default of ``errors.retry.delay.max.ms``."""
WAIT_DELAY_MAX_MS = 30_000
"""The most a connector that waits by default (no ``errors.retry.*`` given) waits between
attempts: a mirror's cluster or a storage source's first file is noticed within 30 s."""


def _number(config: Mapping[str, str], name: str) -> int | None:
    text = config.get(name, "").strip()
    return int(text) if text else None  # validated as a LONG


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often a connector's transient failure is tried again."""

    timeout_ms: int | None
    """None: until it works."""
    delay_max_ms: int

    @classmethod
    def of(cls, config: Mapping[str, str], default_timeout_ms: int | None) -> RetryPolicy:
        """The connector's settings; ``default_timeout_ms`` without ``errors.retry.timeout``
        (Kafka's 0, or None for a connector that waits for its cluster as a client does)."""
        timeout = _number(config, "errors.retry.timeout")
        delay_max = _number(config, "errors.retry.delay.max.ms")
        if delay_max is None:
            waits = timeout is None and default_timeout_ms is None
            delay_max = WAIT_DELAY_MAX_MS if waits else DEFAULT_DELAY_MAX_MS
        if timeout is None:
            timeout = default_timeout_ms
        return cls(None if timeout is not None and timeout < 0 else timeout, delay_max)

    def delay_s(self, attempts: int) -> float:
        """The wait before attempt ``attempts + 1``."""
        return min(FIRST_DELAY_MS << min(attempts, 32), self.delay_max_ms) / 1000

    def gives_up(self, failing_for_s: float) -> bool:
        """Whether a failure that has lasted ``failing_for_s`` is no longer retried."""
        return self.timeout_ms is not None and failing_for_s * 1000 >= self.timeout_ms
