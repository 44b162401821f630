"""A broker's life as the active controller sees it (Kafka's ``BrokerLifecycleManager``).

1. **Register** (BrokerRegistration): the broker's listeners as clients and other brokers reach
   them, its rack, features and a fresh incarnation id; the controller answers with a new broker
   epoch. Retried until ``initial.broker.registration.timeout.ms``.
2. **Heartbeat** (BrokerHeartbeat) every ``broker.heartbeat.interval.ms``, reporting how far the
   broker has read the metadata log (and, when a new one was sampled, the balancer's load:
   ``load_reporter``). It asks to stay fenced until it is ready (its logs loaded
   and its metadata caught up, :meth:`BrokerLifecycleManager.ready_to_unfence`); the controller
   unfences it once it has read its own registration, and fences it again if its heartbeats stop
   for ``broker.session.timeout.ms``; a later heartbeat unfences it again. A heartbeat the
   controller answers with STALE_BROKER_EPOCH (the registration was replaced) registers anew.
3. **Controlled shutdown**: heartbeats with ``WantShutDown`` until the controller says
   ``ShouldShutDown`` (it fences the broker first, and moves leadership away once partitions have
   replicas), or until the given timeout.

All traffic goes through the :class:`~strom.server.channel.controller_channel.ControllerChannel`,
so a
controller failover only delays a heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kio.schema.broker_registration.v4 import request as registration
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i64, u16

from strom.common.waiting import wait_event
from strom.metadata import BrokerEndpoint, BrokerFeature
from strom.protocol.strom_fields import BrokerHeartbeatRequest
from strom.server.broker.load_reporter import LoadReporter
from strom.server.channel.controller_channel import ControllerChannel, ControllerUnavailable

__all__ = ["BrokerLifecycleManager", "BrokerState", "RegistrationFailed"]

log = logging.getLogger(__name__)


class BrokerState(enum.Enum):
    """Kafka's ``BrokerState``, as far as strom goes through them."""

    STARTING = "starting"
    """Not registered yet."""
    RECOVERY = "recovery"
    """Registered and fenced: catching up with the metadata log."""
    RUNNING = "running"
    """Unfenced: may lead partitions, clients are sent to it."""
    PENDING_CONTROLLED_SHUTDOWN = "pending controlled shutdown"
    SHUTTING_DOWN = "shutting down"


class RegistrationFailed(RuntimeError):
    """The controller refused the registration, or none answered in time."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleSettings:
    node_id: int
    cluster_id: str
    features: Sequence[BrokerFeature]
    rack: str | None
    directory_id: uuid.UUID | None
    heartbeat_interval: float
    registration_timeout: float
    previous_broker_epoch: int = -1
    """The epoch of the last session when it ended cleanly (the clean-shutdown marker's)."""


class BrokerLifecycleManager:
    def __init__(
        self,
        settings: LifecycleSettings,
        *,
        channel: ControllerChannel,
        metadata_offset: Callable[[], int],
        loads: LoadReporter | None = None,
    ) -> None:
        """``metadata_offset()``: the offset of the last metadata record this broker applied;
        ``loads``: the balancer's load, reported with the heartbeats."""
        self._settings = settings
        self._loads = loads
        self._channel = channel
        self._metadata_offset = metadata_offset
        self.incarnation_id = uuid.uuid4()
        self.endpoints: Sequence[BrokerEndpoint] = ()
        """The listeners to register, as clients reach them (set before :meth:`register`)."""
        self.broker_epoch = -1
        self.state = BrokerState.STARTING
        self._ready = False
        self._want_shut_down = False
        self._unfenced = asyncio.Event()
        self._shut_down_allowed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._beat_now = asyncio.Event()
        channel.when_connection_lost(self._beat_now.set)
        if loads is not None:
            channel.when_connection_lost(loads.resend)

    @property
    def fenced(self) -> bool:
        return self.state is not BrokerState.RUNNING

    async def register(self) -> int:
        """Register within ``registration_timeout``; the broker epoch. Raises
        :class:`RegistrationFailed`."""
        settings = self._settings
        request = registration.BrokerRegistrationRequest(
            broker_id=BrokerId(settings.node_id),
            cluster_id=settings.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=tuple(
                registration.Listener(
                    name=endpoint.name,
                    host=endpoint.host,
                    port=u16(endpoint.port),
                    security_protocol=i16(endpoint.security_protocol),
                )
                for endpoint in self.endpoints
            ),
            features=tuple(
                registration.Feature(
                    name=feature.name,
                    min_supported_version=i16(feature.min_supported_version),
                    max_supported_version=i16(feature.max_supported_version),
                )
                for feature in settings.features
            ),
            rack=settings.rack,
            log_dirs=() if settings.directory_id is None else (settings.directory_id,),
            # This process's last epoch on a re-registration; the last clean shutdown's first.
            previous_broker_epoch=i64(
                self.broker_epoch if self.broker_epoch >= 0 else settings.previous_broker_epoch
            ),
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.registration_timeout
        while True:
            try:
                response = await self._channel.send(
                    request, timeout=max(deadline - loop.time(), 0.001)
                )
            except ControllerUnavailable as error:
                raise RegistrationFailed(f"cannot register with the controller: {error}") from None
            code = ErrorCode(response.error_code)
            if code is not ErrorCode.duplicate_broker_registration or loop.time() >= deadline:
                break
            # An earlier process of this broker (killed, say) still holds a live session: the
            # registration goes through once the controller has fenced it, as Kafka's does.
            log.info(
                "broker %d: an earlier registration's session is still alive; retrying",
                settings.node_id,
            )
            await asyncio.sleep(settings.heartbeat_interval)
        if code is not ErrorCode.none:
            raise RegistrationFailed(f"the controller refused the registration: {code.name}")
        self.broker_epoch = int(response.broker_epoch)
        self.state = BrokerState.RECOVERY
        log.info("registered as broker %d (broker epoch %d)", settings.node_id, self.broker_epoch)
        return self.broker_epoch

    def start(self) -> None:
        """Heartbeat from now on (after :meth:`register`)."""
        self._task = asyncio.get_running_loop().create_task(
            self._heartbeats(), name="strom-broker-heartbeats"
        )

    def ready_to_unfence(self) -> None:
        """Logs loaded, metadata caught up: ask the controller to unfence this broker."""
        self._ready = True
        self._beat_now.set()

    async def wait_unfenced(self, timeout: float) -> None:
        """Until the controller has unfenced this broker (TimeoutError after ``timeout``)."""
        async with asyncio.timeout(timeout):
            await self._unfenced.wait()

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Ask to shut down and wait for the controller's yes; False when it did not come."""
        if self._task is None:
            return False
        self._want_shut_down = True
        self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
        self._beat_now.set()
        try:
            async with asyncio.timeout(timeout):
                await self._shut_down_allowed.wait()
        except TimeoutError:
            log.warning("the controller did not confirm the controlled shutdown in %gs", timeout)
            return False
        return True

    async def stop(self) -> None:
        self.state = BrokerState.SHUTTING_DOWN
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _heartbeats(self) -> None:
        interval = self._settings.heartbeat_interval
        while True:
            try:
                await self._beat(interval)
            except ControllerUnavailable as error:
                # again at once (the channel has its own backoff): the unanswered heartbeat's
                # connection was dropped, and the controller fences a broker whose heartbeat
                # connection closed unless it hears from it within a short grace (so does any
                # other lost connection to it: ControllerChannel.when_connection_lost)
                log.warning("heartbeat not answered: %s", error)
                continue
            except RegistrationFailed as error:
                log.warning("%s; retrying", error)
            except Exception:
                log.exception("heartbeat failed")
            self._beat_now.clear()
            await wait_event(self._beat_now, interval)

    async def _beat(self, interval: float) -> None:
        request = BrokerHeartbeatRequest(
            broker_id=BrokerId(self._settings.node_id),
            broker_epoch=i64(self.broker_epoch),
            current_metadata_offset=i64(self._metadata_offset()),
            want_fence=not self._ready,
            want_shut_down=self._want_shut_down,
            partition_loads=() if self._loads is None else self._loads.for_heartbeat(),
        )
        response = await self._channel.send(request, timeout=max(interval, 1.0))
        error = ErrorCode(response.error_code)
        if error in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
            log.warning(
                "the controller no longer knows broker epoch %d; registering again",
                self.broker_epoch,
            )
            self._unfenced.clear()
            self.state = BrokerState.STARTING
            await self.register()
            return
        if error is not ErrorCode.none:
            log.warning("heartbeat refused: %s", error.name)
            return
        if self._loads is not None:
            self._loads.delivered()
        if response.should_shut_down:
            self._shut_down_allowed.set()
        if self._want_shut_down:
            return
        if response.is_fenced and not self.fenced:
            log.warning("broker %d is fenced by the controller", self._settings.node_id)
            self.state = BrokerState.RECOVERY
            self._unfenced.clear()
        elif not response.is_fenced and self.fenced:
            log.info("broker %d is unfenced", self._settings.node_id)
            self.state = BrokerState.RUNNING
            self._unfenced.set()
