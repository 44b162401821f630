"""Kafka's settings whose definition strom takes from the catalog (``kafka_settings.json``) as
it is, split by whether strom acts on them, and ``RECORDED_ONLY``, built from them."""

from __future__ import annotations

from typing import Final

from strom.config.kafka_settings import KAFKA_SETTINGS
from strom.config.server_settings import STROM_SERVER_SETTINGS
from strom.config.topic_settings import STROM_TOPIC_SETTINGS

__all__ = ["ACTED_ON_AS_CATALOGUED", "DEFINED_NOT_ACTED_ON", "RECORDED_ONLY"]

DEFINED_NOT_ACTED_ON: Final = frozenset(
    {
        "controller.quorum.append.linger.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "metadata.log.segment.bytes",
        "metadata.max.idle.interval.ms",
        "num.io.threads",
        "num.network.threads",
    }
)

ACTED_ON_AS_CATALOGUED: Final = frozenset(
    {
        "authorizer.class.name",
        "connection.failed.authentication.delay.ms",
        "connections.max.reauth.ms",
        "controller.quota.window.num",
        "controller.quota.window.size.seconds",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "quota.window.num",
        "quota.window.size.seconds",
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.mechanism.controller.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.server.max.receive.size",
        "ssl.cipher.suites",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.principal.mapping.rules",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    }
)
"""Kafka's settings strom acts on with Kafka's own definition (the security and quota
settings)."""

RECORDED_ONLY: Final[frozenset[str]] = frozenset(
    (KAFKA_SETTINGS.broker.keys() - STROM_SERVER_SETTINGS.keys() - ACTED_ON_AS_CATALOGUED)
    | (KAFKA_SETTINGS.topic.keys() - STROM_TOPIC_SETTINGS.keys())
    | DEFINED_NOT_ACTED_ON
)
"""Kafka's settings strom accepts, validates, stores and describes, and does not act on
(docs/broker.md lists them)."""
