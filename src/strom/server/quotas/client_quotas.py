"""Client quotas (Kafka's ``ClientQuotaManager`` family, KIP-13, KIP-55, KIP-124, KIP-219,
KIP-599): bounds per user, client id, or both, as the metadata image's ``ClientQuotaRecord``s
set them.

* A client's quota of a kind (``producer_byte_rate``...) is the first entity holding that key,
  in Kafka's order (``DefaultQuotaCallback``): user and client id, user and default client id,
  user, default user and client id, default user and default client id, default user, client
  id, default client id. Clients whose quota comes from one entity share one sensor when the
  entity names them (``user=alice``: every client of alice), and each has its own when it is a
  default (``user=<default>``: one sensor per user).
* ``producer_byte_rate``, ``consumer_byte_rate`` and ``request_percentage``
  (:class:`ClientQuotaManager`) are measured by a ``SampledRate`` of ``quota.window.num``
  windows of ``quota.window.size.seconds``; once the rate is over the quota, the throttle time
  is Kafka's ``QuotaUtils.throttleTime``: how long no more may be recorded for it to fall back
  within (at most one window for ``request_percentage``, as Kafka's
  ``ClientRequestQuotaManager``).
* ``controller_mutation_rate`` (:class:`ControllerMutationQuotaManager`) is a ``TokenBucket``
  of ``controller.quota.window.num`` windows of ``controller.quota.window.size.seconds``,
  charged one token per partition created or deleted (see :class:`ControllerMutationQuota`).
* With no quota of a kind in the image, recording costs one attribute check (``enabled``).
"""

from __future__ import annotations

import abc
from typing import Final, Generic, TypeVar

from strom.common import Clock, ErrorCode, KafkaError
from strom.common.sampled_rate import SampledRate, throttle_time_ms
from strom.common.token_bucket import TokenBucket
from strom.config import ServerConfig
from strom.metadata.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotaEntity,
    ClientQuotasImage,
    quota_entity,
)

__all__ = [
    "ClientQuotaManager",
    "ClientQuotas",
    "ControllerMutationQuota",
    "ControllerMutationQuotaManager",
    "quota_of",
]

_Sensor = tuple[str, str]
"""(user, client id) the quota is measured for; "" where the quota's entity has no part."""
S = TypeVar("S")


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


class _QuotaSensors(abc.ABC, Generic[S]):
    """One kind of quota on one node: each client's quota from the image, and the sensors
    measuring them."""

    def __init__(self, key: str, clock: Clock, *, windows: int, window_ms: int) -> None:
        self.key = key
        self._clock = clock
        self._windows = windows
        self._window_ms = window_ms
        self._image = ClientQuotasImage()
        self.enabled = False
        """True when some entity has this quota."""
        self._resolved: dict[tuple[str, str], tuple[float, _Sensor] | None] = {}
        self._sensors: dict[_Sensor, S] = {}

    def configure(self, image: ClientQuotasImage) -> None:
        """Take the quotas of a new image (what was measured so far is kept, unless idle)."""
        self._image = image
        self.enabled = any(self.key in quotas for quotas in image.entities.values())
        self._resolved.clear()
        now = self._clock.monotonic_ms()
        self._sensors = {
            name: sensor for name, sensor in self._sensors.items() if not self._idle(sensor, now)
        }

    def _quota(self, user: str, client_id: str) -> tuple[float, _Sensor] | None:
        client = (user, client_id)
        if client not in self._resolved:
            self._resolved[client] = quota_of(self._image, self.key, user, client_id)
        return self._resolved[client]

    def _sensor(self, name: _Sensor, bound: float) -> S:
        sensor = self._sensors.get(name)
        if sensor is None:
            sensor = self._sensors[name] = self._new_sensor(bound)
        return sensor

    @abc.abstractmethod
    def _new_sensor(self, bound: float) -> S:
        """A sensor for a quota of ``bound``."""

    @abc.abstractmethod
    def _idle(self, sensor: S, now_ms: int) -> bool:
        """True when forgetting the sensor changes nothing."""


class ClientQuotaManager(_QuotaSensors[SampledRate]):
    """A rate quota (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``)."""

    def __init__(
        self,
        key: str,
        clock: Clock,
        *,
        windows: int = 11,
        window_ms: int = 1000,
        max_throttle_ms: int | None = None,
    ) -> None:
        """``max_throttle_ms``: the longest throttle (none by default)."""
        super().__init__(key, clock, windows=windows, window_ms=window_ms)
        self._max_throttle_ms = max_throttle_ms

    def _new_sensor(self, bound: float) -> SampledRate:
        return SampledRate(windows=self._windows, window_ms=self._window_ms)

    def _idle(self, sensor: SampledRate, now_ms: int) -> bool:
        return sensor.rate(now_ms) <= 0

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record ``value`` for the client; the throttle time in ms (0: within its quota)."""
        if not self.enabled:
            return 0
        quota = self._quota(user, client_id)
        if quota is None:
            return 0
        bound, name = quota
        rate = self._sensor(name, bound)
        now = self._clock.monotonic_ms()
        rate.record(value, now)
        throttle_ms = throttle_time_ms(rate, bound, now)
        if self._max_throttle_ms is not None:
            return min(throttle_ms, self._max_throttle_ms)
        return throttle_ms

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a value recorded for an answer that was not sent (a throttled fetch)."""
        quota = self._quota(user, client_id) if self.enabled else None
        if quota is not None:
            self._sensor(quota[1], quota[0]).record(-value, self._clock.monotonic_ms())

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one answer may hold without being throttled whatever came before
        (Kafka's ``getMaxValueInQuotaWindow``); None without a quota."""
        quota = self._quota(user, client_id) if self.enabled else None
        if quota is None:
            return None
        return quota[0] * (self._windows - 1) * self._window_ms / 1000


_EXCEEDED: Final = "The throttling quota has been exceeded."
"""Kafka's message of THROTTLING_QUOTA_EXCEEDED."""


class ControllerMutationQuota:
    """One request's use of a client's ``controller_mutation_rate`` (Kafka's
    ``StrictControllerMutationQuota`` and ``PermissiveControllerMutationQuota``), handed to the
    controller, which calls :meth:`record` with the partitions of each topic it is about to
    create, delete or grow.

    * **Strict** (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): once the client's
      credits are below zero, a topic is refused with THROTTLING_QUOTA_EXCEEDED (``record``
      raises) and the answer carries the time until they are back to zero; while there are
      credits, a topic is accepted whatever its size (it may take them below zero).
    * **Permissive** (older versions, whose clients do not know the error): every topic is
      accepted, and the answer carries the throttle once the credits are below zero.
    """

    def __init__(self, bucket: TokenBucket | None, clock: Clock, *, strict: bool) -> None:
        """``bucket``: the client's credits (None: no quota)."""
        self._bucket = bucket
        self._clock = clock
        self._strict = strict
        self._throttle_ms = 0
        self._throttled_at_ms = 0

    def record(self, partitions: int) -> None:
        """Charge ``partitions`` mutations; raises KafkaError (THROTTLING_QUOTA_EXCEEDED) when a
        strict quota is exhausted."""
        bucket = self._bucket
        if bucket is None:
            return
        now = self._clock.monotonic_ms()
        if self._strict:
            if bucket.tokens(now) < 0:
                self._throttle_ms, self._throttled_at_ms = bucket.throttle_time_ms(now), now
                raise KafkaError(ErrorCode.throttling_quota_exceeded, _EXCEEDED)
            bucket.record(partitions, now)
            return
        bucket.record(partitions, now)
        if bucket.tokens(now) < 0:
            self._throttle_ms, self._throttled_at_ms = bucket.throttle_time_ms(now), now

    def throttle_time_ms(self) -> int:
        """The throttle for the answer: the last one found, less the time since (the answer
        may be sent a while after the controller counted the topics)."""
        elapsed = self._clock.monotonic_ms() - self._throttled_at_ms
        return max(0, self._throttle_ms - elapsed)


class ControllerMutationQuotaManager(_QuotaSensors[TokenBucket]):
    """``controller_mutation_rate`` on a controller (Kafka's ``ControllerMutationQuotaManager``)."""

    def _new_sensor(self, bound: float) -> TokenBucket:
        return TokenBucket(rate=bound, windows=self._windows, window_ms=self._window_ms)

    def _idle(self, sensor: TokenBucket, now_ms: int) -> bool:
        return sensor.is_full(now_ms)

    def new_quota(self, user: str, client_id: str, *, strict: bool) -> ControllerMutationQuota:
        """The client's quota for one request (unbounded without a quota)."""
        quota = self._quota(user, client_id) if self.enabled else None
        if quota is None:
            return ControllerMutationQuota(None, self._clock, strict=strict)
        bound, name = quota
        bucket = self._sensor(name, bound)
        bucket.rate = bound
        return ControllerMutationQuota(bucket, self._clock, strict=strict)


class ClientQuotas:
    """Every client quota of one node (Kafka's ``QuotaManagers``): a broker enforces the byte
    rates and the request quota, a controller the request quota and the mutation rate."""

    def __init__(
        self,
        clock: Clock,
        *,
        windows: int = 11,
        window_ms: int = 1000,
        controller_windows: int = 11,
        controller_window_ms: int = 1000,
    ) -> None:
        self.produce: Final = ClientQuotaManager(
            PRODUCER_BYTE_RATE, clock, windows=windows, window_ms=window_ms
        )
        self.fetch: Final = ClientQuotaManager(
            CONSUMER_BYTE_RATE, clock, windows=windows, window_ms=window_ms
        )
        self.request: Final = ClientQuotaManager(
            REQUEST_PERCENTAGE,
            clock,
            windows=windows,
            window_ms=window_ms,
            max_throttle_ms=window_ms,
        )
        self.controller_mutation: Final = ControllerMutationQuotaManager(
            CONTROLLER_MUTATION_RATE,
            clock,
            windows=controller_windows,
            window_ms=controller_window_ms,
        )
        self._image: ClientQuotasImage | None = None

    @classmethod
    def from_config(cls, config: ServerConfig, clock: Clock) -> ClientQuotas:
        """With the windows of ``quota.window.*`` and ``controller.quota.window.*``."""
        return cls(
            clock,
            windows=config.get_int("quota.window.num"),
            window_ms=config.get_int("quota.window.size.seconds") * 1000,
            controller_windows=config.get_int("controller.quota.window.num"),
            controller_window_ms=config.get_int("controller.quota.window.size.seconds") * 1000,
        )

    def on_image(self, image: ClientQuotasImage) -> None:
        if image is not self._image:
            self._image = image
            for manager in (self.produce, self.fetch, self.request, self.controller_mutation):
                manager.configure(image)
