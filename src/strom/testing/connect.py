"""A real Kafka Connect worker for tests, beside a broker: ``with Connect(broker.bootstrap_servers)
as connect: connect.url``. It runs in this process (its REST listener, topic readers and Spark
queries on threads of their own), on an ephemeral port, with config, offsets and status topics
and a group of its own (so tests sharing a broker do not share a worker), and runs its
connectors in the SparkSession ``spark`` gives (default: ``strom.spark.session()``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from strom.connect.settings import WorkerSettings
from strom.connect.worker import ConnectWorker
from strom.testing.broker import unique_topic_name
from strom.web.server import Listener

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Connect"]


class Connect:
    """One worker; a new ``Connect`` with the same ``settings`` continues where it stopped."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        spark: Callable[[], SparkSession] | None = None,
        settings: WorkerSettings | None = None,
        **values: Any,
    ) -> None:
        name = unique_topic_name("connect")
        self.settings = settings or WorkerSettings(
            bootstrap_servers=bootstrap_servers,
            group_id=name,
            config_topic=f"{name}-configs",
            offset_topic=f"{name}-offsets",
            status_topic=f"{name}-status",
            config_replication_factor=1,
            offset_replication_factor=1,
            status_replication_factor=1,
            offset_partitions=3,
            status_partitions=2,
            listener=Listener("http", "127.0.0.1", 0),
            checkpoint_root=Path(tempfile.mkdtemp(prefix="strom-connect-")),
        )
        if values:
            self.settings = replace(self.settings, **values)
        self._spark = spark
        self.worker: ConnectWorker | None = None

    @property
    def url(self) -> str:
        assert self.worker is not None, "the worker is not started"
        return self.worker.url

    def start(self) -> None:
        self.worker = ConnectWorker(self.settings, spark=self._spark)
        self.worker.start()

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
