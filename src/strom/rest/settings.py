"""The proxy's settings under Confluent REST Proxy's names (``kafka-rest.properties``):
``bootstrap.servers``, ``listeners``, the listener's ``ssl.*``, ``authentication.method`` with
its realm and roles, ``confluent.rest.auth.propagate.method``, and the Kafka clients'
``client.*`` settings (Java's names, as Confluent's proxy takes them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from strom.client.java_tls import tls_settings
from strom.client.service_settings import int_setting
from strom.security.jaas import JaasConfigError, parse_jaas_config
from strom.web.security import ListenerSecurity
from strom.web.server import Listener

__all__ = ["DEFAULT_LISTENER", "RestSettings", "SettingsError"]

DEFAULT_LISTENER = "http://localhost:8082"
_PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PASSED_AS_IS = ("security.protocol", "sasl.mechanism", "client.id")


class SettingsError(ValueError):
    """A setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class RestSettings:
    """One proxy's settings; ``from_properties`` reads them by Confluent's names."""

    bootstrap_servers: str = "localhost:9092"
    listener: Listener = field(default_factory=lambda: Listener.parse(DEFAULT_LISTENER))
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    """The listener's ``ssl.*`` and basic authentication (the JAAS file also from
    ``-Djava.security.auth.login.config=`` in ``$KAFKAREST_OPTS``; realm ``KafkaRest``)."""
    propagate: bool = False
    """``confluent.rest.auth.propagate.method=JETTY_AUTH``: each HTTP user's Kafka requests
    are made with that user's name and password (SASL PLAIN or SCRAM)."""
    client: Mapping[str, str] = field(default_factory=dict)
    """The ``client.*`` settings, without the prefix, by Java's names."""
    schema_registry_url: str | None = None
    consumer_idle_ms: int = 300_000
    """``consumer.instance.timeout.ms``: a v2 consumer instance idle this long is closed."""
    max_body_bytes: int = 16 << 20

    @classmethod
    def from_properties(
        cls, values: Mapping[str, str], environ: Mapping[str, str] = os.environ
    ) -> RestSettings:
        listener = Listener.parse(values.get("listeners", DEFAULT_LISTENER))
        security = ListenerSecurity.from_properties(
            values,
            listener.scheme,
            realm="KafkaRest",
            jvm_options=environ.get("KAFKAREST_OPTS", ""),
        )
        propagate = values.get("confluent.rest.auth.propagate.method", "").strip().upper()
        if propagate not in ("", "JETTY_AUTH"):
            raise SettingsError(
                f"confluent.rest.auth.propagate.method: expected JETTY_AUTH, got {propagate}"
            )
        if propagate and security.jaas_config is None:
            raise SettingsError(
                "confluent.rest.auth.propagate.method=JETTY_AUTH needs authentication.method=BASIC"
            )
        return cls(
            bootstrap_servers=values.get("bootstrap.servers", cls.bootstrap_servers),
            listener=listener,
            security=security,
            propagate=bool(propagate),
            client={k[7:]: v for k, v in values.items() if k.startswith("client.")},
            schema_registry_url=values.get("schema.registry.url"),
            consumer_idle_ms=_int(values, "consumer.instance.timeout.ms", cls.consumer_idle_ms),
            max_body_bytes=_int(values, "max.request.size", cls.max_body_bytes),
        )

    def client_config(self, login: tuple[str, str] | None = None) -> dict[str, str]:
        """librdkafka's settings for the proxy's clients; ``login``: the HTTP user's name
        and password, which replace the configured SASL login (principal propagation)."""
        tls, problem = tls_settings(self.client)
        if problem is not None:
            raise SettingsError(f"client.{problem}")
        config = {"bootstrap.servers": self.bootstrap_servers, **tls}
        config.update({k: v for k, v in self.client.items() if k in _PASSED_AS_IS})
        if "ssl.key.password" in self.client:
            config["ssl.key.password"] = self.client["ssl.key.password"]
        jaas = self.client.get("sasl.jaas.config")
        if jaas is not None and login is None:
            login = _jaas_login(jaas)
        if login is not None:
            config["sasl.username"], config["sasl.password"] = login
        return config


def _jaas_login(text: str) -> tuple[str, str]:
    try:
        module = parse_jaas_config(text)
    except JaasConfigError as error:
        raise SettingsError(f"client.sasl.jaas.config: {error}") from error
    if module.class_name not in (_PLAIN_LOGIN, _SCRAM_LOGIN):
        raise SettingsError(
            f"client.sasl.jaas.config: {module.class_name} is not supported (PLAIN or SCRAM)"
        )
    try:
        return module.options["username"], module.options["password"]
    except KeyError as missing:
        raise SettingsError(f"client.sasl.jaas.config: no {missing.args[0]}=") from None


def _int(values: Mapping[str, str], name: str, default: int) -> int:
    return int_setting(values, name, default, SettingsError)
