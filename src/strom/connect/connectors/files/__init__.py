"""Kafka's file connectors: ``FileStreamSource`` (the lines appended to a file, into a topic)
and ``FileStreamSink`` (a topic's records, as lines of a file); a storage sink and source of
JSON lines, CSV and Parquet files in a directory (Confluent's storage connectors' settings)."""

from strom.connect.connectors.files.connectors import FileStreamSink, FileStreamSource
from strom.connect.connectors.files.storage import StorageSink
from strom.connect.connectors.files.storage_source import StorageSource

__all__ = ["FileStreamSink", "FileStreamSource", "StorageSink", "StorageSource"]
