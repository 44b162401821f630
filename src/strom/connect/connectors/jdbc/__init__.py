"""Confluent's JDBC connectors for PostgreSQL: ``JdbcSourceConnector`` (tables' rows into
topics) and ``JdbcSinkConnector`` (topics' records into tables)."""

from strom.connect.connectors.jdbc.sink import JdbcSink
from strom.connect.connectors.jdbc.source import JdbcSource

__all__ = ["JdbcSink", "JdbcSource"]
