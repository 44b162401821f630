"""A streaming Spark data source of the complete lines appended to a file (``tail -f``), as
Kafka's ``FileStreamSourceTask`` reads them: its offset is the byte position after the last line
read, kept in Kafka Connect's offsets topic under the source partition ``{"filename": file}``
as ``{"position": N}``, so a new query (or a restarted worker) continues there. A line without its
newline yet waits for it; a file that does not exist yet is waited for."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.types import StructType

from strom.connect.connectors.offset_writer import OffsetWriter

__all__ = ["TailSource"]

log = logging.getLogger(__name__)


class TailSource(DataSource):
    """Options: ``path`` (absolute: Spark runs the reader in a directory of its own),
    ``position`` (where a new query starts), ``batch.size`` (lines per micro-batch at most), and
    for the offsets topic ``connector``, ``filename`` (the partition's name, the connector's
    ``file`` as given), ``offsets.topic`` and ``client`` (the worker's librdkafka settings as
    JSON)."""

    @classmethod
    def name(cls) -> str:
        return "strom-connect-file"

    def schema(self) -> str:
        return "line string"

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return _TailReader(dict(self.options))


class _TailReader(SimpleDataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.file = Path(options["path"])
        self.batch_size = int(options.get("batch.size", "2000"))
        self.start = int(options.get("position", "0"))
        client: dict[str, Any] = json.loads(options["client"])
        partition = {"filename": options["filename"]}
        self.offsets = OffsetWriter(
            client, options["offsets.topic"], options["connector"], partition
        )

    def initialOffset(self) -> dict[str, int]:
        return {"position": self.start}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[str]], dict[str, int]]:
        # Spark plans a micro-batch once the one before it completed: ``start`` is done.
        self.offsets.store(start)
        lines, end = self._lines(start["position"], self.batch_size)
        return iter([(line,) for line in lines]), {"position": end}

    def readBetweenOffsets(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Iterator[tuple[str]]:
        lines, _ = self._lines(start["position"], None, stop=end["position"])
        return iter([(line,) for line in lines])

    def commit(self, end: dict[str, int]) -> None:
        self.offsets.store(end)

    def _lines(
        self, position: int, limit: int | None, stop: int | None = None
    ) -> tuple[list[str], int]:
        """Complete lines from ``position`` (up to ``limit`` lines or byte ``stop``), and the
        position after the last."""
        try:
            with self.file.open("rb") as handle:
                handle.seek(position)
                data = handle.read() if stop is None else handle.read(stop - position)
        except FileNotFoundError:
            return [], position
        complete = data[: data.rfind(b"\n") + 1]
        lines = complete.split(b"\n")[:-1]
        if limit is not None and len(lines) > limit:
            lines = lines[:limit]
        used = sum(len(line) + 1 for line in lines)
        return [line.removesuffix(b"\r").decode("utf-8", "replace") for line in lines], (
            position + used
        )
