"""ControllerServer over a quorum log it does not own: pipelined appends, replies once committed,
NOT_CONTROLLER when the leadership goes, sessions fenced when heartbeats stop."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence
from typing import TypeVar

import pytest

from strom.common.clock import SystemClock
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
from strom.server.controller.controller_server import ControllerServer, NotControllerError

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
        with pytest.raises(NotControllerError):
            await controller.create_topics(topic("a"))

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
        with pytest.raises(NotControllerError):
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
