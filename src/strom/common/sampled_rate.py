"""A rate over sampled time windows, as Kafka's ``Rate`` over a ``SampledStat``: the basis of
replication throttles and client quotas.

Values are summed into windows of ``window_ms`` (a window starts with the first value recorded
after the previous one is complete); ``windows`` of them are kept. The rate is the sum of the
windows kept over the time since the oldest one started, counted as at least all but one full
window plus what has passed of the last, so that a burst into a young sampler is not measured
as an enormous rate (Kafka's ``Rate.windowSize``).
"""

from __future__ import annotations

from collections import deque

__all__ = ["SampledRate", "throttle_time_ms"]


class SampledRate:
    """Values per second over the last ``windows`` windows of ``window_ms``."""

    def __init__(self, *, windows: int, window_ms: int) -> None:
        self.windows = windows
        self.window_ms = window_ms
        self._samples: deque[list[float]] = deque()
        """[window start ms, sum] of the windows kept, oldest first."""

    def record(self, value: float, now_ms: int) -> None:
        self._expire(now_ms)
        if self._samples and now_ms < self._samples[-1][0] + self.window_ms:
            self._samples[-1][1] += value
        else:
            self._samples.append([now_ms, value])

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._expire(now_ms)
        elapsed = now_ms - int(self._samples[0][0]) if self._samples else 0
        full_windows = elapsed // self.window_ms
        if full_windows < self.windows - 1:
            elapsed += (self.windows - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def rate(self, now_ms: int) -> float:
        """Per second."""
        size = self.window_size_ms(now_ms)
        return sum(total for _, total in self._samples) * 1000 / size

    def _expire(self, now_ms: int) -> None:
        horizon = now_ms - self.windows * self.window_ms
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.popleft()


def throttle_time_ms(rate: SampledRate, bound: float, now_ms: int) -> int:
    """How long no more may be recorded for the rate to fall back to ``bound`` (0: within it):
    Kafka's ``QuotaUtils.throttleTime``, X = (O - T) / T * W for an observed rate O, a bound T
    and the window W the rate is measured over."""
    observed = rate.rate(now_ms)
    if observed <= bound:
        return 0
    return round((observed - bound) / bound * rate.window_size_ms(now_ms))
