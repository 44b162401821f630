"""``Broker(security=Security(...))``: a secured test broker, its certificates and its users.

The broker gets a CA, a server certificate for its host and, for mutual TLS, client
certificates signed by the same CA; its listener speaks ``protocol`` and its SASL users log in
with their passwords: PLAIN's from ``sasl.jaas.config``, SCRAM's from credentials the new
cluster starts with (as ``strom storage format --add-scram`` writes them). ``client_config``
gives confluent-kafka (librdkafka) the settings to connect as one of the users.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from strom.client.security import ClientSecurity
from strom.controller import DEFAULT_METADATA_VERSION
from strom.security.scram import ScramMechanism, ScramUser
from strom.server.bootstrap_metadata import (
    BOOTSTRAP_FILE,
    scram_records,
    write_bootstrap_checkpoint,
)

if TYPE_CHECKING:
    from strom.testing.certificates import IssuedCertificate

__all__ = ["Security", "SecurityFiles"]

_PROTOCOLS: Final = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
_PLAIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class Security:
    """What a test broker's listener asks of its clients."""

    protocol: str = "SASL_SSL"
    mechanisms: tuple[str, ...] = ("PLAIN",)
    users: Mapping[str, str] = field(
        default_factory=lambda: {"admin": "admin-secret", "alice": "alice-secret"}
    )
    """SASL user -> password (the first is the one test helpers connect as)."""
    client_auth: str = "none"
    """``ssl.client.auth``: none, requested or required."""

    def __post_init__(self) -> None:
        if self.protocol not in _PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(sorted(_PROTOCOLS))}")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


class SecurityFiles:
    """The certificates of one secured broker, written under ``directory``."""

    def __init__(self, security: Security, directory: Path, host: str) -> None:
        from strom.testing.certificates import CertificateAuthority  # noqa: PLC0415 - secured only

        self.security = security
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = CertificateAuthority()
        self.ca_file = self.ca.write_pem(directory / "ca.crt")
        self.server = self.ca.issue(host, hosts=(host, "localhost", "127.0.0.1"))
        self.keystore = self.server.write_keystore_pem(directory / "server.pem")
        self._directory = directory
        self._clients: dict[str, tuple[Path, Path]] = {}

    def client_certificate(self, name: str) -> tuple[Path, Path]:
        """(key, certificate chain) files of a client certificate with subject CN=<name>."""
        if name not in self._clients:
            issued: IssuedCertificate = self.ca.issue(name, client=True)
            self._clients[name] = issued.write_pem(self._directory, f"client-{name}")
        return self._clients[name]

    def bootstrap(self, data_dir: Path) -> None:
        """Give a new data directory the users' SCRAM credentials (nothing for an existing
        cluster, or without a SCRAM mechanism)."""
        mechanisms = [
            m for name in self.security.mechanisms if (m := ScramMechanism.from_name(name))
        ]
        if not mechanisms or (data_dir / "meta.properties").exists():
            return
        users = [
            ScramUser(mechanism, name, password)
            for mechanism in mechanisms
            for name, password in self.security.users.items()
        ]
        data_dir.mkdir(parents=True, exist_ok=True)
        if not (data_dir / BOOTSTRAP_FILE).exists():
            write_bootstrap_checkpoint(
                data_dir,
                metadata_version=DEFAULT_METADATA_VERSION,
                timestamp=0,
                scram=scram_records(users),
            )

    def server_settings(self) -> dict[str, str]:
        """The broker's settings for a listener named after its protocol."""
        security = self.security
        settings: dict[str, str] = {}
        if security.tls:
            settings |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca_file),
                "ssl.client.auth": security.client_auth,
            }
            if security.sasl:  # Kafka asks SASL_SSL clients only through the listener's setting
                settings |= {
                    f"listener.name.{name}.ssl.client.auth": security.client_auth
                    for name in ("sasl_ssl", "controller")
                }
        if security.sasl:
            users = " ".join(
                f'user_{name}="{password}"' for name, password in security.users.items()
            )
            # the first user is also the one brokers and controllers log in to each other as
            login, password = next(iter(security.users.items()))
            settings |= {
                "sasl.enabled.mechanisms": ",".join(security.mechanisms),
                "sasl.mechanism.inter.broker.protocol": security.mechanisms[0],
                "sasl.mechanism.controller.protocol": security.mechanisms[0],
                "sasl.jaas.config": (
                    f'{_PLAIN_MODULE} required username="{login}" password="{password}" {users};'
                ),
            }
        return settings

    def client_security(self) -> ClientSecurity:
        """strom's own client (``strom.client``) connecting as the first user."""
        security = self.security
        context = None
        if security.tls:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            if security.client_auth == "required":
                key, chain = self.client_certificate(next(iter(security.users), "client"))
                context.load_cert_chain(chain, key)
        if not security.sasl:
            return ClientSecurity(ssl_context=context)
        user, password = next(iter(security.users.items()))
        return ClientSecurity(context, security.mechanisms[0], user, password)

    def client_config(
        self,
        user: str | None = None,
        *,
        password: str | None = None,
        mechanism: str | None = None,
        certificate: str | None = None,
    ) -> dict[str, Any]:
        """confluent-kafka settings to connect as ``user`` (the first user by default), with
        its password unless another is given; ``certificate``: present the client certificate
        CN=<certificate> (mutual TLS; by default the user's when the broker asks for one)."""
        security = self.security
        config: dict[str, Any] = {"security.protocol": security.protocol}
        if security.tls:
            config["ssl.ca.location"] = str(self.ca_file)
            name = certificate or (user or next(iter(security.users), "client"))
            if certificate is not None or security.client_auth == "required":
                key, chain = self.client_certificate(name)
                config |= {"ssl.key.location": str(key), "ssl.certificate.location": str(chain)}
        if security.sasl and (mechanism or security.mechanisms[0]) == "OAUTHBEARER":
            config |= {
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": "true",
                "sasl.oauthbearer.config": f"principal={user or next(iter(security.users))}",
            }
        elif security.sasl:
            name = user or next(iter(security.users))
            config |= {
                "sasl.mechanism": mechanism or security.mechanisms[0],
                "sasl.username": name,
                "sasl.password": password if password is not None else security.users.get(name, ""),
            }
        return config
