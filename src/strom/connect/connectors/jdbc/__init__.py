"""Confluent's JDBC connectors for PostgreSQL: ``JdbcSourceConnector`` (tables' rows into
topics)."""

from strom.connect.connectors.jdbc.source import JdbcSource

__all__ = ["JdbcSource"]
