"""Brokers, features and producer ids: registration, fencing, bootstrap, id blocks.

A broker registers (fenced, as in Kafka) and gets a broker epoch that names this session of it;
once it has caught up with the metadata log it is unfenced, and only unfenced brokers lead
partitions. The broker epoch is the offset its RegisterBrokerRecord will have when the caller
follows the rule that records are appended and applied before the next operation (never less
than the broker's previous epoch + 1), which is how Kafka numbers broker epochs.

Producer ids are handed out in blocks; each block is a ProducerIdsRecord, so after a restart the
image says where the next block starts and no id is ever handed out twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.controller.leadership import broker_available, broker_unavailable
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.controller.settings import (
    DEFAULT_METADATA_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    ControllerSettings,
)
from strom.metadata import (
    ELIGIBLE_LEADER_REPLICAS_FEATURE,
    METADATA_VERSION_FEATURE,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistration,
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    FencingChange,
    MetadataImage,
    MetadataRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

__all__ = [
    "BrokerHeartbeat",
    "BrokerHeartbeatReply",
    "BrokerRegistrationReply",
    "BrokerRegistrationRequest",
    "ClusterControl",
    "ProducerIdsBlock",
]

_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    broker_id: int
    incarnation_id: uuid.UUID
    endpoints: Sequence[BrokerEndpoint]
    features: Sequence[BrokerFeature] = ()
    rack: str | None = None
    log_dirs: Sequence[uuid.UUID] = ()
    previous_broker_epoch: int = -1
    """The epoch the broker's last session ended in cleanly (-1: none, or an unclean end)."""


@dataclass(frozen=True, slots=True)
class BrokerRegistrationReply:
    error: ApiError = NO_ERROR
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeat:
    """What a broker says in its heartbeat, with what the controller knows of its session."""

    broker_id: int
    broker_epoch: int
    want_fence: bool
    want_shut_down: bool
    caught_up: bool
    """The broker's metadata offset has reached its own registration (the controller judges)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatReply:
    error: ApiError = NO_ERROR
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """Ids ``first_producer_id`` to ``first_producer_id + size - 1`` belong to the broker."""

    error: ApiError = NO_ERROR
    assigned_broker_id: int = -1
    first_producer_id: int = -1
    size: int = 0


class ClusterControl:
    def __init__(self, settings: ControllerSettings) -> None:
        self._settings = settings

    def bootstrap(
        self,
        image: MetadataImage,
        *,
        metadata_version: int = DEFAULT_METADATA_VERSION,
        scram: Sequence[UserScramCredentialRecord] = (),
    ) -> ControllerResult[None]:
        """The records a brand-new cluster starts with (nothing when already bootstrapped)."""
        if image.features.metadata_version is not None:
            return ControllerResult([], None)
        return ControllerResult(
            [
                FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=metadata_version),
                # New clusters keep eligible leader replicas, as Kafka's from 4.1.
                FeatureLevelRecord(name=ELIGIBLE_LEADER_REPLICAS_FEATURE, feature_level=1),
                *scram,
            ],
            None,
        )

    def register_broker(
        self, image: MetadataImage, request: BrokerRegistrationRequest, *, alive: bool = False
    ) -> ControllerResult[BrokerRegistrationReply]:
        """A new session of the broker (a new broker epoch), fenced until it has caught up.
        ``alive``: the broker's current registration still has a live session; then only the
        same incarnation may register again (DUPLICATE_BROKER_REGISTRATION otherwise)."""
        if request.broker_id < 0:
            return _registration_error(
                ErrorCode.invalid_request, f"broker id must not be negative: {request.broker_id}"
            )
        names = [endpoint.name for endpoint in request.endpoints]
        if len(set(names)) != len(names):
            return _registration_error(
                ErrorCode.invalid_request, "two endpoints of the broker have the same name"
            )
        unsupported = _unsupported_feature(image, request.features)
        if unsupported is not None:
            return _registration_error(ErrorCode.unsupported_version, unsupported)
        previous = image.cluster.broker(request.broker_id)
        if alive and previous is not None and previous.incarnation_id != request.incarnation_id:
            return _registration_error(
                ErrorCode.duplicate_broker_registration,
                f"another broker is registered as {request.broker_id} and its session is alive",
            )
        epoch = image.highest_offset + 1
        if previous is not None:
            epoch = max(epoch, previous.epoch + 1)
        record = RegisterBrokerRecord(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            broker_epoch=epoch,
            endpoints=tuple(request.endpoints),
            features=tuple(request.features),
            rack=request.rack,
            fenced=True,
            log_dirs=tuple(request.log_dirs),
        )
        # A new session: what the broker led or followed in its last one is moved off it until
        # it is unfenced. A session that did not end cleanly (the broker does not name its last
        # epoch) may have lost unflushed records: the broker leaves the ELR too.
        moves = []
        if previous is not None:
            moves = broker_unavailable(
                image,
                self._settings.server_config,
                request.broker_id,
                unclean_shutdown=request.previous_broker_epoch != previous.epoch,
            )
        return ControllerResult([record, *moves], BrokerRegistrationReply(broker_epoch=epoch))

    def unfence_broker(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ApiError]:
        """Let a registered broker lead partitions (it has caught up with the metadata log)."""
        return self._fencing(image, broker_id, broker_epoch, fence=False)

    def fence_broker(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ApiError]:
        return self._fencing(image, broker_id, broker_epoch, fence=True)

    def _fencing(
        self, image: MetadataImage, broker_id: int, broker_epoch: int, *, fence: bool
    ) -> ControllerResult[ApiError]:
        broker, error = _check_epoch(image, broker_id, broker_epoch)
        if broker is None:
            return ControllerResult([], error)
        if broker.fenced == fence:
            return ControllerResult([], NO_ERROR)
        record = BrokerRegistrationChangeRecord(
            broker_id=broker_id,
            broker_epoch=broker_epoch,
            fenced=FencingChange.FENCE if fence else FencingChange.UNFENCE,
        )
        moves = (broker_unavailable if fence else broker_available)(
            image, self._settings.server_config, broker_id
        )
        return ControllerResult([record, *moves], NO_ERROR)

    def heartbeat(
        self, image: MetadataImage, beat: BrokerHeartbeat
    ) -> ControllerResult[BrokerHeartbeatReply]:
        """A broker's heartbeat: unfenced once caught up (unless it wants to stay fenced),
        fenced when it asks, and fenced and told to stop when it wants to shut down."""
        broker, error = _check_epoch(image, beat.broker_id, beat.broker_epoch)
        if broker is None:
            return ControllerResult([], BrokerHeartbeatReply(error=error))
        fence = broker.fenced
        if beat.want_shut_down or beat.want_fence:
            fence = True
        elif beat.caught_up:
            fence = False
        records = self._fencing(image, beat.broker_id, beat.broker_epoch, fence=fence).records
        reply = BrokerHeartbeatReply(
            is_caught_up=beat.caught_up,
            is_fenced=fence,
            should_shut_down=beat.want_shut_down,
        )
        return ControllerResult(records, reply)

    def unregister_broker(self, image: MetadataImage, broker_id: int) -> ControllerResult[ApiError]:
        """UnregisterBroker (``kafka-cluster.sh unregister``): the broker leaves the cluster,
        out of every ISR and ELR and no longer a leader first, as Kafka's
        ``ReplicationControlManager.unregisterBroker``. A broker that still runs registers again
        with its next heartbeat."""
        broker = image.cluster.broker(broker_id)
        if broker is None:
            return ControllerResult(
                [],
                ApiError(
                    ErrorCode.broker_id_not_registered,
                    f"broker {broker_id} is not currently registered",
                ),
            )
        moves = broker_unavailable(
            image, self._settings.server_config, broker_id, unclean_shutdown=True
        )
        record = UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch)
        return ControllerResult([*moves, record], NO_ERROR)

    def allocate_producer_ids(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ProducerIdsBlock]:
        """The next block of producer ids for the broker (AllocateProducerIds)."""
        broker, error = _check_epoch(image, broker_id, broker_epoch)
        if broker is None:
            return ControllerResult([], ProducerIdsBlock(error=error))
        first = image.producer_ids.next_producer_id
        if first > _LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
            return ControllerResult(
                [],
                ProducerIdsBlock(
                    error=ApiError(
                        ErrorCode.unknown_server_error, "every producer id has been handed out"
                    )
                ),
            )
        records: list[MetadataRecord] = [
            ProducerIdsRecord(
                broker_id=broker_id,
                broker_epoch=broker_epoch,
                next_producer_id=first + PRODUCER_ID_BLOCK_SIZE,
            )
        ]
        block = ProducerIdsBlock(
            assigned_broker_id=broker_id, first_producer_id=first, size=PRODUCER_ID_BLOCK_SIZE
        )
        return ControllerResult(records, block)


def _registration_error(code: ErrorCode, message: str) -> ControllerResult[BrokerRegistrationReply]:
    return ControllerResult([], BrokerRegistrationReply(error=ApiError(code, message)))


def _unsupported_feature(image: MetadataImage, features: Sequence[BrokerFeature]) -> str | None:
    """Why the broker cannot join (a finalized feature level it does not support), or None."""
    supported = {feature.name: feature for feature in features}
    for name, level in sorted(image.features.finalized_levels.items()):
        feature = supported.get(name)
        low, high = (
            (0, 0)
            if feature is None
            else (
                feature.min_supported_version,
                feature.max_supported_version,
            )
        )
        if not low <= level <= high:
            return (
                f"the cluster runs {name} at level {level}, but the broker supports "
                f"levels {low} to {high}"
            )
    return None


def _check_epoch(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> tuple[BrokerRegistration | None, ApiError]:
    broker = image.cluster.broker(broker_id)
    if broker is None:
        return None, ApiError(ErrorCode.stale_broker_epoch, f"broker {broker_id} is not registered")
    if broker.epoch != broker_epoch:
        return None, ApiError(
            ErrorCode.stale_broker_epoch,
            f"broker {broker_id} is at epoch {broker.epoch}, not {broker_epoch}",
        )
    return broker, NO_ERROR
