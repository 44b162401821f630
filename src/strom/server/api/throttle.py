"""A response's ``throttle_time_ms``: the field every throttled API answers with, as the
connection (quotas), the handlers and the controller's Envelope read and write it."""

from __future__ import annotations

import datetime
from typing import Final

from kio.static.primitive import i32Timedelta

__all__ = ["NO_THROTTLE", "throttle_field", "throttle_of"]

NO_THROTTLE: Final = i32Timedelta.parse(datetime.timedelta(0))


def throttle_field(throttle_ms: int) -> i32Timedelta:
    """A response's ``throttle_time_ms``."""
    if not throttle_ms:
        return NO_THROTTLE
    return i32Timedelta.parse(datetime.timedelta(milliseconds=throttle_ms))


def throttle_of(body: object) -> int:
    """A response body's ``throttle_time_ms`` (0 when its version has none)."""
    throttle: datetime.timedelta | None = getattr(body, "throttle_time", None)
    return 0 if throttle is None else round(throttle.total_seconds() * 1000)
