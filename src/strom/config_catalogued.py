"""Kafka's settings whose definition strom takes from the catalog (``kafka_settings.json``) as
it is, split by whether strom acts on them; ``strom.config`` builds ``RECORDED_ONLY`` from them."""

from __future__ import annotations

from typing import Final

__all__ = ["ACTED_ON_AS_CATALOGUED", "DEFINED_NOT_ACTED_ON"]

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
