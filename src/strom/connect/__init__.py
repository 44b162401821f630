"""Kafka Connect on Spark: a worker with Kafka Connect's settings, REST API and internal topics,
whose connectors run as Spark Structured Streaming queries over the ``strom`` data source."""
