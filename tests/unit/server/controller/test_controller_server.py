"""ControllerServer over a quorum log it does not own: pipelined appends, replies once committed,
NOT_CONTROLLER when the leadership goes (REQUEST_TIMED_OUT to a forwarded request whose records
were written: its outcome is unknown), sessions fenced when heartbeats stop."""

from __future__ import annotations

import asyncio
import datetime
import random
import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic as CreatableTopicV7
from kio.schema.create_topics.v7.request import CreateTopicsRequest as CreateTopicsRequestV7
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from strom.common import ErrorCode
from strom.common.clock import SystemClock
from strom.config import ServerConfig
from strom.controller import (
    SUPPORTED_FEATURES,
    BrokerRegistrationRequest,
    ControllerSettings,
    CreatableTopic,
    CreateTopicsRequest,
    QuorumController,
)
from strom.metadata import (
    BrokerEndpoint,
    EncodedBatch,
    MetadataLoader,
)
from strom.protocol.api import (
    KAFKA_CONTROLLER_VERSIONS,
    ApiKey,
    decode_request,
    encode_request,
    make_request_header,
)
from strom.server.api.handler_table import HandlerTable, RequestContext
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.configs.log_configs import TopicConfigResolver
from strom.server.controller.controller_server import (
    CommitUnknownError,
    ControllerServer,
    NotControllerError,
)
from strom.server.controller.handlers.admin_table import admin_handlers
from strom.server.controller.handlers.controller_table import broker_request_handlers
from strom.server.quotas.client_quotas import ClientQuotas

T = TypeVar("T")


class HeldQuorum:
    """A quorum log whose commits the test releases by hand."""

    def __init__(self, loader: MetadataLoader) -> None:
        self.loader = loader
        self.pending: list[EncodedBatch] = []
        self.next_offset = 0
        self.controller: ControllerServer | None = None

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        batch = EncodedBatch(base_offset=self.next_offset, records=tuple(records), epoch=epoch)
        self.pending.append(batch)
        self.next_offset += len(records) + 1  # a gap, as control records leave
        return batch.base_offset + len(records) - 1

    def commit(self, count: int | None = None) -> None:
        batches = self.pending[:count] if count is not None else list(self.pending)
        del self.pending[: len(batches)]
        for batch in batches:
            self.loader.apply_batch(batch.decode())
            assert self.controller is not None
            self.controller.committed(batch.base_offset + len(batch.records) - 1)


def make(
    session_timeout_ms: int = 60_000, close_grace_ms: int = -1
) -> tuple[ControllerServer, HeldQuorum, MetadataLoader]:
    loader = MetadataLoader()
    quorum = HeldQuorum(loader)
    controller = ControllerServer(
        QuorumController(ControllerSettings(), random=random.Random(1)),
        node_id=1,
        quorum=quorum,
        committed=loader,
        clock=SystemClock(),
        session_timeout_ms=session_timeout_ms,
        close_grace_ms=close_grace_ms,
    )
    quorum.controller = controller
    return controller, quorum, loader


def topic(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest([CreatableTopic(name=name, num_partitions=1, replication_factor=1)])


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def committed(quorum: HeldQuorum, operation: asyncio.Future[T]) -> T:
    await settle()
    quorum.commit()
    return await operation


SOME_ENDPOINT = BrokerEndpoint("PLAINTEXT", "h", 9092)


async def active_with_broker(
    controller: ControllerServer,
    quorum: HeldQuorum,
    broker_id: int = 7,
    endpoint: BrokerEndpoint = SOME_ENDPOINT,
) -> int:
    """Activate, bootstrap, register an unfenced broker (its heartbeat on connection "c");
    its epoch."""
    controller.activate(epoch=1)
    await settle()
    quorum.commit()
    reply = await committed(
        quorum,
        asyncio.ensure_future(
            controller.register_broker(
                BrokerRegistrationRequest(
                    broker_id=broker_id,
                    incarnation_id=uuid.uuid4(),
                    endpoints=[endpoint],
                    features=SUPPORTED_FEATURES,
                )
            )
        ),
    )
    beat = await committed(
        quorum,
        asyncio.ensure_future(
            controller.broker_heartbeat(
                broker_id=broker_id,
                broker_epoch=reply.broker_epoch,
                metadata_offset=quorum.loader.image.highest_offset,
                want_fence=False,
                want_shut_down=False,
                connection="c",
            )
        ),
    )
    assert not beat.is_fenced
    return reply.broker_epoch


def test_an_inactive_controller_refuses() -> None:
    async def run() -> None:
        controller, _, _ = make()
        with pytest.raises(NotControllerError) as refused:
            await controller.create_topics(topic("a"))
        assert not isinstance(refused.value, CommitUnknownError)  # nothing was written

    asyncio.run(run())


def test_operations_validate_against_what_was_written_and_reply_once_committed() -> None:
    async def run() -> None:
        controller, quorum, loader = make()
        await active_with_broker(controller, quorum)
        first = asyncio.ensure_future(controller.create_topics(topic("a")))
        second = asyncio.ensure_future(controller.create_topics(topic("a")))
        await settle()
        # Both validated before anything was committed: the second saw the first's topic.
        assert len(quorum.pending) == 1
        assert not first.done() and second.done()
        [refused] = second.result()
        assert refused.error.code.name == "topic_already_exists"
        assert loader.image.topic("a") is None
        quorum.commit()
        [created] = await first
        assert created.error.is_success
        assert loader.image.topic("a") is not None
        await controller.stop()

    asyncio.run(run())


def test_losing_the_leadership_fails_what_waits_and_forgets_the_written_image() -> None:
    async def run() -> None:
        controller, quorum, _ = make()
        await active_with_broker(controller, quorum)
        waiting = asyncio.ensure_future(controller.create_topics(topic("b")))
        await settle()
        assert controller.image.topic("b") is not None
        controller.deactivate()
        with pytest.raises(CommitUnknownError):  # its records were written: it may still be
            await waiting
        assert controller.image.topic("b") is None
        assert not controller.is_active
        await controller.stop()

    asyncio.run(run())


def test_a_broker_without_heartbeats_is_fenced() -> None:
    async def run() -> None:
        controller, quorum, loader = make(session_timeout_ms=200)
        await active_with_broker(controller, quorum)

        def fenced() -> bool:
            return loader.image.cluster.brokers[7].fenced

        assert not fenced()
        for _ in range(100):  # the session runs out: the controller writes the fencing
            await asyncio.sleep(0.02)
            quorum.commit()
            if fenced():
                break
        assert fenced()
        await controller.stop()

    asyncio.run(run())


def test_a_broker_whose_heartbeat_connection_closed_is_fenced_once_its_listener_refuses() -> None:
    """However long past the grace, a broker whose listener accepts connections (a live process,
    too slow to heartbeat again) keeps its session; once nothing listens, it is fenced."""

    async def run() -> None:
        listener = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        controller, quorum, loader = make(close_grace_ms=0)
        await active_with_broker(
            controller, quorum, endpoint=BrokerEndpoint("PLAINTEXT", "127.0.0.1", port)
        )

        def fenced() -> bool:
            return loader.image.cluster.brokers[7].fenced

        controller.heartbeat_connection_closed("c")
        for _ in range(20):  # a second: twenty probes of the live listener
            await asyncio.sleep(0.05)
            quorum.commit()
        assert not fenced()
        listener.close()
        await listener.wait_closed()
        for _ in range(100):
            await asyncio.sleep(0.02)
            quorum.commit()
            if fenced():
                break
        assert fenced()
        await controller.stop()

    asyncio.run(run())


class BrokenQuorum(HeldQuorum):
    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        raise OSError(28, "No space left on device")


def test_a_failed_metadata_write_ends_the_controller_for_good() -> None:
    async def run() -> None:
        loader = MetadataLoader()
        controller = ControllerServer(
            QuorumController(ControllerSettings(), random=random.Random(1)),
            node_id=1,
            quorum=BrokenQuorum(loader),
            committed=loader,
            clock=SystemClock(),
            session_timeout_ms=1000,
        )
        controller.activate(epoch=1)
        await settle()  # the bootstrap fails
        assert not controller.is_active
        controller.activate(epoch=2)  # a later election does not bring it back
        assert not controller.is_active
        with pytest.raises(NotControllerError, match="No space left"):
            await controller.create_topics(topic("t"))
        assert loader.image.is_empty
        await controller.stop()

    asyncio.run(run())


def envelope_of(body: Any) -> EnvelopeRequest:
    header = make_request_header(body, correlation_id=3, client_id="admin")
    return EnvelopeRequest(
        request_data=encode_request(header=header, body=body),
        request_principal=None,
        client_host_address=bytes([127, 0, 0, 1]),
    )


def test_a_forwarded_request_whose_controller_goes_before_the_commit_times_out() -> None:
    """A CreateTopics forwarded in an Envelope: its records are written, then the leadership
    goes before they are committed (the successor may commit them). The envelope answers
    REQUEST_TIMED_OUT (the outcome is unknown, as Kafka answers such a request), not
    NOT_CONTROLLER, on which the broker would send it again and the retry meet the topic it
    made (TOPIC_ALREADY_EXISTS to a client whose request created it)."""

    async def run() -> None:
        controller, quorum, _ = make()
        await active_with_broker(controller, quorum)
        config = ServerConfig({"process.roles": "controller", "node.id": "1"})
        quotas = ClientQuotas.from_config(config, SystemClock())
        registry = HandlerTable(reference=KAFKA_CONTROLLER_VERSIONS)
        for registered in (
            *broker_request_handlers(
                controller,
                registry=registry,
                request_quota=quotas.request,
                request_exempt=frozenset(),
            ),
            *admin_handlers(
                controller,
                describer=ConfigDescriber(TopicConfigResolver(config, node_id=1)),
                mutations=quotas.controller_mutation,
                image=lambda: controller.image,
            ),
        ):
            registry.register(registered)
        create = CreateTopicsRequestV7(
            topics=(
                CreatableTopicV7(
                    name=TopicName("t"),
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            validate_only=False,
        )
        envelope = envelope_of(create)
        request = decode_request(
            encode_request(
                header=make_request_header(envelope, correlation_id=1, client_id="broker-2"),
                body=envelope,
            ),
            versions=KAFKA_CONTROLLER_VERSIONS,
        )
        handler = registry.get(ApiKey.ENVELOPE)
        assert handler is not None
        context = RequestContext(request=request, client_address="broker:1", connection_id="c")
        answer: asyncio.Future[Any] = asyncio.ensure_future(handler.handle(context))
        await settle()
        assert quorum.pending and not answer.done()  # written, not committed
        controller.deactivate()
        assert (await answer).error_code == ErrorCode.request_timed_out
        controller.activate(epoch=2)  # not active: refused before anything is written
        controller.deactivate()
        refused: Any = await handler.handle(context)
        assert refused.error_code == ErrorCode.not_controller
        await controller.stop()

    asyncio.run(run())
