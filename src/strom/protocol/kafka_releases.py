"""The API versions Apache Kafka releases advertised, for version emulation.

A broker started to emulate a release advertises, per API, the intersection of what that
release's broker advertised on its client listener and what strom serves; APIs the release did
not have are not advertised at all. The ranges are facts taken from each release's message
specs (``clients/src/main/resources/common/message/*Request.json`` at the release tag,
``validVersions`` of the specs a broker listens to, less a latest version marked unstable,
which brokers do not advertise by default). The first release is written out whole, each later
one as what changed since the one before (``_CHANGES``); Kafka 4.0 is ``KAFKA_BROKER_VERSIONS``
itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, VersionRange

__all__ = ["KAFKA_RELEASES", "release_versions"]

_FIRST_RELEASE: Final = "2.8"
_FIRST: Final[Mapping[ApiKey, tuple[int, int]]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),
    ApiKey.LIST_OFFSETS: (0, 6),
    ApiKey.METADATA: (0, 11),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.OFFSET_FETCH: (0, 7),
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    ApiKey.DESCRIBE_ACLS: (0, 2),
    ApiKey.CREATE_ACLS: (0, 2),
    ApiKey.DELETE_ACLS: (0, 2),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 2),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.CREATE_DELEGATION_TOKEN: (0, 2),
    ApiKey.RENEW_DELEGATION_TOKEN: (0, 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 2),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_QUORUM: (0, 0),
    ApiKey.UPDATE_FEATURES: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 0),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.UNREGISTER_BROKER: (0, 0),
}
"""What the first release emulated advertised."""

_CHANGES: Final[Mapping[str, Mapping[ApiKey, tuple[int, int] | None]]] = {
    "3.0": {
        ApiKey.LIST_OFFSETS: (0, 7),
        ApiKey.OFFSET_FETCH: (0, 8),
        ApiKey.FIND_COORDINATOR: (0, 4),
        ApiKey.UNREGISTER_BROKER: None,
        ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
        ApiKey.LIST_TRANSACTIONS: (0, 0),
    },
    "3.3": {
        ApiKey.FETCH: (0, 13),
        ApiKey.METADATA: (0, 12),
        ApiKey.JOIN_GROUP: (0, 9),
        ApiKey.LEAVE_GROUP: (0, 5),
        ApiKey.DESCRIBE_ACLS: (0, 3),
        ApiKey.CREATE_ACLS: (0, 3),
        ApiKey.DELETE_ACLS: (0, 3),
        ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
        ApiKey.CREATE_DELEGATION_TOKEN: (0, 3),
        ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 3),
        ApiKey.DESCRIBE_QUORUM: (0, 1),
        ApiKey.UPDATE_FEATURES: (0, 1),
        ApiKey.UNREGISTER_BROKER: (0, 0),
    },
    "3.6": {
        ApiKey.FETCH: (0, 15),
        ApiKey.LIST_OFFSETS: (0, 8),
        ApiKey.ADD_PARTITIONS_TO_TXN: (0, 4),
    },
    "3.7": {
        ApiKey.PRODUCE: (0, 10),
        ApiKey.FETCH: (0, 16),
        ApiKey.OFFSET_COMMIT: (0, 9),
        ApiKey.OFFSET_FETCH: (0, 9),
        ApiKey.DESCRIBE_CLUSTER: (0, 1),
        ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 0),
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: (0, 0),
        ApiKey.PUSH_TELEMETRY: (0, 0),
        ApiKey.LIST_CONFIG_RESOURCES: (0, 0),
    },
    "3.8": {
        ApiKey.PRODUCE: (0, 11),
        ApiKey.FIND_COORDINATOR: (0, 5),
        ApiKey.LIST_GROUPS: (0, 5),
        ApiKey.INIT_PRODUCER_ID: (0, 5),
        ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
        ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
        ApiKey.END_TXN: (0, 4),
        ApiKey.TXN_OFFSET_COMMIT: (0, 4),
        ApiKey.LIST_TRANSACTIONS: (0, 1),
        ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    },
}
"""Release -> what changed since the one before it: an API's new range, or None for an API
the release no longer had."""


def _expanded() -> dict[str, Mapping[ApiKey, VersionRange]]:
    """Each release's whole table: the first one's, with each later release's changes applied
    in turn."""
    ranges = dict(_FIRST)
    tables = {_FIRST_RELEASE: dict(ranges)}
    for release, changes in _CHANGES.items():
        for key, change in changes.items():
            if change is None:
                del ranges[key]
            else:
                ranges[key] = change
        tables[release] = dict(ranges)
    return {
        release: MappingProxyType({key: VersionRange(*pair) for key, pair in table.items()})
        for release, table in tables.items()
    }


KAFKA_RELEASES: Final[Mapping[str, Mapping[ApiKey, VersionRange]]] = MappingProxyType(
    {**_expanded(), "4.0": KAFKA_BROKER_VERSIONS}
)
"""Release ("2.8", "3.6", "4.0", ...) -> API key -> the versions its brokers advertised."""


def release_versions(release: str) -> Mapping[ApiKey, VersionRange]:
    """The versions of a release given as "3.6" or "3.6.1" (patch releases change no API
    version); ValueError naming the known releases otherwise."""
    major_minor = ".".join(release.strip().split(".")[:2])
    try:
        return KAFKA_RELEASES[major_minor]
    except KeyError:
        known = ", ".join(KAFKA_RELEASES)
        raise ValueError(f"unknown Kafka release {release!r}; known: {known}") from None
