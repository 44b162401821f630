"""The REST proxy (``strom rest``): Confluent REST Proxy's v3 API over HTTP for applications
that cannot embed a Kafka client. A client of strom like any other: its Kafka clients are
librdkafka's, one set per HTTP principal when principal propagation is on, so the brokers'
ACLs judge every request."""
