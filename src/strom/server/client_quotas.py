"""Client quotas (Kafka's ``ClientQuotaManager``, KIP-13, KIP-55, KIP-219): bandwidth bounds
per user, client id, or both, as the metadata image's ``ClientQuotaRecord``s set them.

* A client's quota of a kind (``producer_byte_rate``...) is the first entity holding that key,
  in Kafka's order (``DefaultQuotaCallback``): user and client id, user and default client id,
  user, default user and client id, default user and default client id, default user, client
  id, default client id. Clients whose quota comes from one entity share one sampled rate when
  the entity names them (``user=alice``: every client of alice), and each has its own when it
  is a default (``user=<default>``: one rate per user).
* Each use is recorded in a ``SampledRate`` of ``quota.window.num`` windows of
  ``quota.window.size.seconds``; once the rate is over the quota, the throttle time is Kafka's
  ``QuotaUtils.throttleTime``: how long no more may be recorded for it to fall back within.
* With no quota of a kind in the image, recording costs one attribute check (``enabled``).
"""

from __future__ import annotations

from typing import Final

from strom.common import Clock
from strom.common.sampled_rate import SampledRate, throttle_time_ms
from strom.metadata.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaEntity,
    ClientQuotasImage,
    quota_entity,
)

__all__ = ["BandwidthQuotas", "ClientQuotaManager", "quota_of"]

_Sensor = tuple[str, str]
"""(user, client id) the sampled rate is kept for; "" where the quota's entity has no part."""


def _lookups(user: str, client_id: str) -> tuple[tuple[ClientQuotaEntity, _Sensor], ...]:
    """Kafka's precedence, each entity with the sensor a match on it uses."""
    both = (user, client_id)
    return (
        (quota_entity({USER: user, CLIENT_ID: client_id}), both),
        (quota_entity({USER: user, CLIENT_ID: None}), both),
        (quota_entity({USER: user}), (user, "")),
        (quota_entity({USER: None, CLIENT_ID: client_id}), both),
        (quota_entity({USER: None, CLIENT_ID: None}), both),
        (quota_entity({USER: None}), (user, "")),
        (quota_entity({CLIENT_ID: client_id}), ("", client_id)),
        (quota_entity({CLIENT_ID: None}), ("", client_id)),
    )


def quota_of(
    image: ClientQuotasImage, key: str, user: str, client_id: str
) -> tuple[float, _Sensor] | None:
    """The quota ``key`` of a client and the sensor it is measured by; None: no quota."""
    for entity, sensor in _lookups(user, client_id):
        value = image.quotas(entity).get(key)
        if value is not None:
            return value, sensor
    return None


class ClientQuotaManager:
    """One kind of quota (``producer_byte_rate`` or ``consumer_byte_rate``) on one broker."""

    def __init__(self, key: str, clock: Clock, *, windows: int = 11, window_ms: int = 1000) -> None:
        self.key = key
        self._clock = clock
        self._windows = windows
        self._window_ms = window_ms
        self._image = ClientQuotasImage()
        self.enabled = False
        """True when some entity has this quota."""
        self._resolved: dict[tuple[str, str], tuple[float, _Sensor] | None] = {}
        self._sensors: dict[_Sensor, SampledRate] = {}

    def configure(self, image: ClientQuotasImage) -> None:
        """Take the quotas of a new image (rates measured so far are kept)."""
        self._image = image
        self.enabled = any(self.key in quotas for quotas in image.entities.values())
        self._resolved.clear()
        now = self._clock.monotonic_ms()
        self._sensors = {
            sensor: rate for sensor, rate in self._sensors.items() if rate.rate(now) > 0
        }

    def _quota(self, user: str, client_id: str) -> tuple[float, _Sensor] | None:
        client = (user, client_id)
        if client not in self._resolved:
            self._resolved[client] = quota_of(self._image, self.key, user, client_id)
        return self._resolved[client]

    def _sensor(self, sensor: _Sensor) -> SampledRate:
        rate = self._sensors.get(sensor)
        if rate is None:
            rate = self._sensors[sensor] = SampledRate(
                windows=self._windows, window_ms=self._window_ms
            )
        return rate

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record ``value`` for the client; the throttle time in ms (0: within its quota)."""
        if not self.enabled:
            return 0
        quota = self._quota(user, client_id)
        if quota is None:
            return 0
        bound, sensor = quota
        rate = self._sensor(sensor)
        now = self._clock.monotonic_ms()
        rate.record(value, now)
        return throttle_time_ms(rate, bound, now)

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a value recorded for an answer that was not sent (a throttled fetch)."""
        quota = self._quota(user, client_id) if self.enabled else None
        if quota is not None:
            self._sensor(quota[1]).record(-value, self._clock.monotonic_ms())

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one answer may hold without being throttled whatever came before
        (Kafka's ``getMaxValueInQuotaWindow``); None without a quota."""
        quota = self._quota(user, client_id) if self.enabled else None
        if quota is None:
            return None
        return quota[0] * (self._windows - 1) * self._window_ms / 1000


class BandwidthQuotas:
    """The produce and fetch quotas of one broker."""

    def __init__(self, clock: Clock, *, windows: int = 11, window_ms: int = 1000) -> None:
        self.produce: Final = ClientQuotaManager(
            PRODUCER_BYTE_RATE, clock, windows=windows, window_ms=window_ms
        )
        self.fetch: Final = ClientQuotaManager(
            CONSUMER_BYTE_RATE, clock, windows=windows, window_ms=window_ms
        )
        self._image: ClientQuotasImage | None = None

    def on_image(self, image: ClientQuotasImage) -> None:
        if image is not self._image:
            self._image = image
            self.produce.configure(image)
            self.fetch.configure(image)
