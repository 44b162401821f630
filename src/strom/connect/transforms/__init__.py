"""Kafka Connect's single message transforms and predicates by their class names: ``specs``
turns a connector's settings into transform specs and names every problem (no I/O, no Spark),
``columns`` applies them to a connector's record DataFrame as Spark column expressions."""
