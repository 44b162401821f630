"""Kafka principals (``User:alice``) and the one a TLS client certificate maps to."""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Final

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_reader, entity_writer

from strom.security.principal_mapping import PrincipalMapper

__all__ = [
    "ANONYMOUS",
    "KafkaPrincipal",
    "deserialize_principal",
    "serialize_principal",
    "ssl_principal",
    "subject_name",
]


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
    from cryptography import x509  # noqa: PLC0415 - TLS client certificates only

    certificate = x509.load_der_x509_certificate(der_certificate)
    return certificate.subject.rfc4514_string()


def ssl_principal(der_certificate: bytes | None, mapper: PrincipalMapper) -> KafkaPrincipal:
    """Kafka's ``DefaultKafkaPrincipalBuilder`` for TLS: the mapped subject of the client's
    certificate, or ANONYMOUS without one (``ssl.client.auth`` none or requested)."""
    if der_certificate is None:
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name_of(subject_name(der_certificate)))


_PRINCIPAL_DATA_VERSION: Final = 0


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    """The principal as a forwarding broker puts it in an Envelope (Kafka's
    ``DefaultKafkaPrincipalBuilder.serialize``: a version, then ``DefaultPrincipalData``)."""
    data = DefaultPrincipalData(
        type_=principal.type, name=principal.name, token_authenticated=False
    )
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", _PRINCIPAL_DATA_VERSION))
    entity_writer(DefaultPrincipalData)(buffer, data)
    return buffer.getvalue()


def deserialize_principal(raw: bytes) -> KafkaPrincipal:
    """The principal of :func:`serialize_principal`'s bytes; ValueError for others."""
    if len(raw) < 2 or struct.unpack_from(">h", raw)[0] != _PRINCIPAL_DATA_VERSION:
        raise ValueError("not a version 0 DefaultPrincipalData")
    try:
        data, _ = entity_reader(DefaultPrincipalData)(memoryview(raw), 2)
    except Exception as error:  # kio raises DecodeError, or KeyError for unknown tags
        raise ValueError(f"not a DefaultPrincipalData: {error}") from None
    return KafkaPrincipal(data.type_, data.name)
