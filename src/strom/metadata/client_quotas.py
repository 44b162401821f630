"""Client quotas in the metadata image: ``ClientQuotaRecord``s applied, as Kafka's
``ClientQuotasImage`` / ``ClientQuotasDelta``.

An entity is a set of (entity type, name) parts: ``user``, ``client-id`` or both; a name of
None is that type's default (``<default>``). Each entity maps quota keys
(``producer_byte_rate``...) to values; an entity without quotas is not kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, TypeAlias

from strom.common import ErrorCode, KafkaError
from strom.metadata.records import ClientQuotaRecord, EntityData

__all__ = [
    "CLIENT_ID",
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "INTEGRAL_QUOTA_KEYS",
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "MATCH_SPECIFIED",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "USER",
    "ClientQuotaEntity",
    "ClientQuotasDelta",
    "ClientQuotasImage",
    "describe_client_quotas",
    "quota_entity",
]

USER: Final = "user"
CLIENT_ID: Final = "client-id"
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
QUOTA_KEYS: Final = (
    PRODUCER_BYTE_RATE,
    CONSUMER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    CONTROLLER_MUTATION_RATE,
)
"""Kafka's ``QuotaConfig.userAndClientQuotaConfigs``."""
INTEGRAL_QUOTA_KEYS: Final = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE})
"""Kafka's LONG quota keys (the others are DOUBLE)."""

ClientQuotaEntity: TypeAlias = tuple[tuple[str, str | None], ...]
"""(entity type, name or None for the default) pairs, sorted by type."""


def quota_entity(parts: Mapping[str, str | None]) -> ClientQuotaEntity:
    return tuple(sorted(parts.items()))


@dataclass(frozen=True)
class ClientQuotasImage:
    """Entity -> quota key -> value."""

    entities: Mapping[ClientQuotaEntity, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        frozen = {e: MappingProxyType(dict(q)) for e, q in self.entities.items()}
        object.__setattr__(self, "entities", MappingProxyType(frozen))

    def quotas(self, entity: ClientQuotaEntity) -> Mapping[str, float]:
        return self.entities.get(entity, {})

    def records(self) -> Iterator[ClientQuotaRecord]:
        for entity, quotas in sorted(self.entities.items(), key=lambda item: repr(item[0])):
            parts = tuple(EntityData(kind, name) for kind, name in entity)
            for key, value in sorted(quotas.items()):
                yield ClientQuotaRecord(entity=parts, key=key, value=value)


class ClientQuotasDelta:
    def __init__(self, image: ClientQuotasImage) -> None:
        self.image = image
        self._changes: dict[tuple[ClientQuotaEntity, str], float | None] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    def replay(self, record: ClientQuotaRecord) -> None:
        entity = quota_entity({part.entity_type: part.entity_name for part in record.entity})
        self._changes[entity, record.key] = None if record.remove else record.value

    def apply(self) -> ClientQuotasImage:
        if not self._changes:
            return self.image
        entities = {entity: dict(quotas) for entity, quotas in self.image.entities.items()}
        for (entity, key), value in self._changes.items():
            quotas = entities.setdefault(entity, {})
            if value is None:
                quotas.pop(key, None)
            else:
                quotas[key] = value
            if not quotas:
                del entities[entity]
        return ClientQuotasImage(entities)


MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2


def describe_client_quotas(
    image: ClientQuotasImage,
    components: Sequence[tuple[str, int, str | None]],
    *,
    strict: bool,
) -> list[tuple[ClientQuotaEntity, Mapping[str, float]]]:
    """The entities a DescribeClientQuotas filter matches (Kafka's
    ``ClientQuotasImage.describe``): each component is (entity type, match type, match);
    ``strict`` leaves out entities with parts the filter does not name. A bad filter raises
    KafkaError (INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity type)."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for kind, match_type, match in components:
        if not kind:
            raise KafkaError(ErrorCode.invalid_request, "Invalid empty entity type.")
        if kind in exact or kind in typed:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Entity type {kind} cannot appear more than once in the filter.",
            )
        if kind not in (USER, CLIENT_ID, "ip"):
            raise KafkaError(ErrorCode.unsupported_version, f"Unsupported entity type {kind}")
        if match_type == MATCH_EXACT and match is not None:
            exact[kind] = match
        elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED) and match is None:
            if match_type == MATCH_DEFAULT:
                exact[kind] = None
            else:
                typed.add(kind)
        else:
            raise KafkaError(
                ErrorCode.invalid_request, f"Bad match type {match_type} and match {match!r}"
            )
    found = []
    for entity, quotas in image.entities.items():
        parts = dict(entity)
        if strict and len(parts) != len(exact) + len(typed):
            continue
        if all(kind in parts and parts[kind] == name for kind, name in exact.items()) and all(
            kind in parts for kind in typed
        ):
            found.append((entity, quotas))
    return sorted(found, key=lambda item: repr(item[0]))
