"""A token bucket, as Kafka's ``TokenBucket`` stat (KIP-599): the basis of the controller
mutation quota.

Credits are refilled at ``rate`` per second (the quota), up to a burst of ``windows`` windows of
``window_ms`` at that rate; each use takes its value out, and may take the credits below zero.
A bucket is full when first used. Unlike a sampled rate, a burst is paid back as soon as the
rate has refilled it, not when its window expires.
"""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    """The credits of one client. ``rate`` may be changed (a new quota): it applies from then
    on to the credits left."""

    def __init__(self, *, rate: float, windows: int, window_ms: int) -> None:
        self.rate = rate
        self.windows = windows
        self.window_ms = window_ms
        self._tokens: float | None = None
        """None until first used (then full)."""
        self._last_ms = 0

    @property
    def burst(self) -> float:
        """The most credits the bucket holds."""
        return self.windows * self.window_ms / 1000 * self.rate

    def tokens(self, now_ms: int) -> float:
        """The credits at ``now_ms`` (below zero: the quota is exhausted)."""
        if self._tokens is None:
            self._tokens = self.burst
        else:
            refilled = self._tokens + self.rate * max(now_ms - self._last_ms, 0) / 1000
            self._tokens = min(self.burst, refilled)
        self._last_ms = now_ms
        return self._tokens

    def record(self, value: float, now_ms: int) -> None:
        """Take ``value`` credits out."""
        self._tokens = min(self.burst, self.tokens(now_ms) - value)

    def throttle_time_ms(self, now_ms: int) -> int:
        """How long until the credits are back to zero if nothing more is taken (0: not
        exhausted): Kafka's ``-tokens / rate * 1000``."""
        tokens = self.tokens(now_ms)
        return 0 if tokens >= 0 else round(-tokens / self.rate * 1000)

    def is_full(self, now_ms: int) -> bool:
        """True when the bucket holds its whole burst (as good as a new one)."""
        return self.tokens(now_ms) >= self.burst
