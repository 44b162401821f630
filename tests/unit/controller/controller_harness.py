"""A controller wired to an in-memory metadata log and a loader, as the server wires them."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import TypeVar

from strom.controller import (
    SUPPORTED_FEATURES,
    BrokerRegistrationRequest,
    ControllerResult,
    ControllerSettings,
    QuorumController,
)
from strom.metadata import (
    BrokerEndpoint,
    InMemoryMetadataLog,
    MetadataImage,
    MetadataLoader,
    append_records,
    decode_record,
    encode_record,
)

T = TypeVar("T")


class Harness:
    def __init__(self, settings: ControllerSettings | None = None, *, seed: int = 0) -> None:
        self.controller = QuorumController(
            settings or ControllerSettings(), random=random.Random(seed)
        )
        self.log = InMemoryMetadataLog()
        self.loader = MetadataLoader()
        self.run(self.controller.bootstrap(self.image))

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def run(self, result: ControllerResult[T]) -> T:
        """Append the records (checking that they survive encoding) and apply them."""
        for record in result.records:
            assert decode_record(encode_record(record)) == record
        if result.records:
            self.loader.apply_batch(append_records(self.log, result.records))
        return result.response

    def add_broker(self, broker_id: int, *, rack: str | None = None, fenced: bool = False) -> int:
        reply = self.run(
            self.controller.register_broker(
                self.image,
                BrokerRegistrationRequest(
                    broker_id=broker_id,
                    incarnation_id=uuid.UUID(int=broker_id + 1000),
                    endpoints=[BrokerEndpoint("PLAINTEXT", "localhost", 9092 + broker_id)],
                    features=SUPPORTED_FEATURES,
                    rack=rack,
                ),
            )
        )
        assert reply.error.is_success, reply.error
        if not fenced:
            error = self.run(
                self.controller.unfence_broker(
                    self.image, broker_id=broker_id, broker_epoch=reply.broker_epoch
                )
            )
            assert error.is_success, error
        return reply.broker_epoch

    def add_brokers(self, ids: Sequence[int]) -> None:
        for broker_id in ids:
            self.add_broker(broker_id)
