"""Kafka principals (``User:alice``) and the one a TLS client certificate maps to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cryptography import x509

from strom.security.principal_mapping import PrincipalMapper

__all__ = ["ANONYMOUS", "KafkaPrincipal", "ssl_principal", "subject_name"]


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """Who a connection is, as Kafka's ``KafkaPrincipal``: a type and a name."""

    type: str
    name: str

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls("User", name)

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


ANONYMOUS: Final = KafkaPrincipal.user("ANONYMOUS")
"""PLAINTEXT connections and TLS clients without a certificate."""


def subject_name(der_certificate: bytes) -> str:
    """The certificate's subject as an RFC 2253 string (``CN=alice,O=acme``), as Java's
    ``X500Principal.getName()`` writes it: the most specific name first."""
    certificate = x509.load_der_x509_certificate(der_certificate)
    return certificate.subject.rfc4514_string()


def ssl_principal(der_certificate: bytes | None, mapper: PrincipalMapper) -> KafkaPrincipal:
    """Kafka's ``DefaultKafkaPrincipalBuilder`` for TLS: the mapped subject of the client's
    certificate, or ANONYMOUS without one (``ssl.client.auth`` none or requested)."""
    if der_certificate is None:
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name_of(subject_name(der_certificate)))
