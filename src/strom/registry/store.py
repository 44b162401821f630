"""The Kafka side of the registry: the ``_schemas`` topic (one partition, compacted), replayed
from its start into the ``RegistryState`` and written by the primary; a write returns once this
instance has read its own records back, so a reply always reflects the write (read-your-writes),
exactly as every other instance will see it. The plumbing is
:class:`strom.client.topic_log.TopicLog`; this module adds the registry's records and errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from strom.client.topic_log import TopicLog, TopicLogTimeout, TopicLogWriteFailed
from strom.registry.errors import RegistryError
from strom.registry.records import Record

__all__ = ["SchemaStore"]


class SchemaStore(TopicLog):
    """The ``_schemas`` topic, applied record by record to ``apply`` under ``lock``."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str,
        apply: Callable[[Record], None],
        lock: threading.Lock,
        client_config: dict[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        def apply_record(key: bytes | None, value: bytes | None) -> None:
            record = Record.decode(key or b"", value)
            if record is not None:
                apply(record)

        super().__init__(
            topic=topic,
            client={"bootstrap.servers": bootstrap_servers, **(client_config or {})},
            apply=apply_record,
            lock=lock,
            timeout=timeout,
        )

    def catch_up(self, targets: dict[int, int] | None = None) -> None:
        try:
            super().catch_up(targets)
        except TopicLogTimeout as timeout:
            [offset] = timeout.args[0].values()
            raise RegistryError.timeout(
                f"Write to the Kafka store timed out while waiting for offset {offset}"
            ) from None

    def write_records(self, records: Iterable[Record]) -> None:
        """Append records and wait until they are read back and applied."""
        try:
            self.write(record.encode() for record in records)
        except TopicLogWriteFailed as failed:
            raise RegistryError.store_error(
                f"Error while writing to the Kafka store: {failed.args[0]}"
            ) from None
