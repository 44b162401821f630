"""HandlerTable.register_lazy: APIs advertised at once, their handlers built on the first
request to any API of the group, and a builder that does not build what it promised refused."""

from __future__ import annotations

import pytest
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, VersionRange
from strom.server.api.handler_table import HandlerTable, RequestContext


class Answering:
    """A handler of ``api_key`` at the versions Kafka's broker serves (never called here)."""

    def __init__(self, api_key: ApiKey, versions: VersionRange | None = None) -> None:
        self.api_key = api_key
        self.versions = versions or KAFKA_BROKER_VERSIONS[api_key]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        raise NotImplementedError


def test_a_lazy_group_is_advertised_at_once_and_built_on_its_first_request() -> None:
    builds: list[None] = []

    def build() -> list[Answering]:
        builds.append(None)
        return [Answering(ApiKey.JOIN_GROUP), Answering(ApiKey.SYNC_GROUP)]

    registry = HandlerTable()
    registry.register_lazy((ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP), build)
    assert registry.versions == {
        ApiKey.JOIN_GROUP: KAFKA_BROKER_VERSIONS[ApiKey.JOIN_GROUP],
        ApiKey.SYNC_GROUP: KAFKA_BROKER_VERSIONS[ApiKey.SYNC_GROUP],
    }
    assert ApiKey.SYNC_GROUP in registry and not builds
    join = registry.get(ApiKey.JOIN_GROUP)
    sync = registry.get(ApiKey.SYNC_GROUP)
    assert join is not None and join.api_key == ApiKey.JOIN_GROUP
    assert sync is not None and sync.api_key == ApiKey.SYNC_GROUP
    assert registry.get(ApiKey.JOIN_GROUP) is join
    assert len(builds) == 1
    assert registry.get(ApiKey.HEARTBEAT) is None


def test_a_lazy_api_cannot_be_registered_twice() -> None:
    registry = HandlerTable()
    registry.register(Answering(ApiKey.HEARTBEAT))
    with pytest.raises(ValueError, match="already registered"):
        registry.register_lazy((ApiKey.HEARTBEAT,), list)
    registry.register_lazy((ApiKey.JOIN_GROUP,), list)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Answering(ApiKey.JOIN_GROUP))


def test_a_builder_must_build_exactly_the_apis_it_was_registered_for_at_kafkas_versions() -> None:
    registry = HandlerTable()
    registry.register_lazy((ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP), list)
    with pytest.raises(ValueError, match="no handler was built for"):
        registry.get(ApiKey.JOIN_GROUP)
    registry.register_lazy((ApiKey.LEAVE_GROUP,), lambda: [Answering(ApiKey.OFFSET_COMMIT)])
    with pytest.raises(ValueError, match="was built, not registered"):
        registry.get(ApiKey.LEAVE_GROUP)
    narrower = VersionRange(KAFKA_BROKER_VERSIONS[ApiKey.HEARTBEAT].max_version, 4)
    registry.register_lazy((ApiKey.HEARTBEAT,), lambda: [Answering(ApiKey.HEARTBEAT, narrower)])
    with pytest.raises(ValueError, match="not the"):
        registry.get(ApiKey.HEARTBEAT)


def test_a_lazy_api_the_emulated_release_lacks_is_neither_advertised_nor_served() -> None:
    ceiling = {ApiKey.JOIN_GROUP: KAFKA_BROKER_VERSIONS[ApiKey.JOIN_GROUP]}
    registry = HandlerTable(ceiling=ceiling)
    registry.register_lazy(
        (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP),
        lambda: [Answering(ApiKey.JOIN_GROUP), Answering(ApiKey.SYNC_GROUP)],
    )
    assert list(registry.versions) == [ApiKey.JOIN_GROUP]
    assert registry.get(ApiKey.SYNC_GROUP) is None
    assert registry.get(ApiKey.JOIN_GROUP) is not None
