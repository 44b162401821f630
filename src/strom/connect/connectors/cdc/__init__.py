"""Change data capture: Debezium's PostgreSQL connector (logical replication, ``pgoutput``)."""

from strom.connect.connectors.cdc.connector import PostgresConnector

__all__ = ["PostgresConnector"]
