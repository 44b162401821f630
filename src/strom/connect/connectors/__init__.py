"""The connectors, one package per family: ``files`` (Kafka's FileStreamSource and
FileStreamSink)."""
