"""ksqlDB's processing log as a topic and a stream: with
`ksql.logging.processing.topic.auto.create`, the server creates the topic
(`ksql.logging.processing.topic.name`, default `<service.id>ksql_processing_log`) and writes
every entry of ksqlDB's shape its queries' decoders log (`ProcessingLog.java`: a record that
could not be deserialized) to it as ksqlDB's JSON (`level`, `logger`, `time`, `message`); with
`ksql.logging.processing.stream.auto.create` too, the stream `KSQL_PROCESSING_LOG` over it has
ksqlDB's columns, so `SELECT * FROM KSQL_PROCESSING_LOG EMIT CHANGES;` follows the errors.

The entries are drained from the Spark driver's JVM: in local mode (the executors are the
driver's JVM) that is every entry; on a cluster, an executor's entries stay in its log.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["STREAM", "ProcessingLogWriter", "stream_statement"]

log = logging.getLogger(__name__)

STREAM = "KSQL_PROCESSING_LOG"
_COLUMNS = (
    "LOGGER STRING, LEVEL STRING, TIME BIGINT, MESSAGE STRUCT<TYPE INT, "
    "DESERIALIZATIONERROR STRUCT<TARGET STRING, ERRORMESSAGE STRING, RECORDB64 STRING, "
    "CAUSE ARRAY<STRING>, `TOPIC` STRING>, "
    "RECORDPROCESSINGERROR STRUCT<ERRORMESSAGE STRING, RECORD STRING, CAUSE ARRAY<STRING>>, "
    "PRODUCTIONERROR STRUCT<ERRORMESSAGE STRING>, "
    "SERIALIZATIONERROR STRUCT<TARGET STRING, ERRORMESSAGE STRING, RECORD STRING, "
    "CAUSE ARRAY<STRING>, `TOPIC` STRING>, "
    "KAFKASTREAMSTHREADERROR STRUCT<ERRORMESSAGE STRING, THREADNAME STRING, CAUSE ARRAY<STRING>>>"
)


def stream_statement(topic: str) -> str:
    """ksqlDB's `CREATE STREAM KSQL_PROCESSING_LOG` over the processing log topic."""
    return (
        f"CREATE STREAM {STREAM} ({_COLUMNS}) "
        f"WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON', KEY_FORMAT='KAFKA');"
    )


def entry(line: str) -> bytes:
    """A drained `<epoch ms> <message JSON>` as the topic's record (ksqlDB's log4j JSON)."""
    millis, message = line.split(" ", 1)
    body = {
        "level": "ERROR",
        "logger": "processing.deserializer",
        "time": int(millis),
        "message": json.loads(message),
    }
    return json.dumps(body, separators=(",", ":")).encode()


class ProcessingLogWriter:
    """Drains the driver JVM's entries into `topic` every half second, once `spark` gives a
    session (it is made when the first query is planned)."""

    def __init__(
        self, topic: str, client: dict[str, Any], spark: Callable[[], SparkSession | None]
    ) -> None:
        self.topic = topic
        self._spark = spark
        self._producer = Producer({**client, "linger.ms": 50})
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sql-processing-log", daemon=True)
        self._captured: Any = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._producer.flush(5)

    def _run(self) -> None:
        while not self._stopping.wait(0.5):
            try:
                self._drain()
            except Exception:  # the next round tries again
                log.exception("writing the processing log to %s", self.topic)

    def _drain(self) -> None:
        spark = self._spark()
        if spark is None:
            return
        if self._captured is None:
            from strom.spark.jvm import processing_log  # noqa: PLC0415
            from strom.spark.session import activate  # noqa: PLC0415

            activate(spark)
            self._captured = processing_log()
            self._captured.capture()
        for line in self._captured.drain():
            self._producer.produce(self.topic, entry(str(line)))
        self._producer.poll(0)
