"""The connectors, one package per family: ``files`` (Kafka's FileStreamSource and
FileStreamSink), ``jdbc`` (Confluent's JDBC source and sink for PostgreSQL), ``cdc``
(Debezium's PostgreSQL change data capture)."""
