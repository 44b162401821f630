"""Certificates for tests: a throwaway CA and the server and client certificates it signs.

Made with ``cryptography`` (EC P-256 keys, valid for a day from an hour ago), written as the
files Kafka's settings and clients read: PEM (key and chain together, or apart) and PKCS12.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "IssuedCertificate"]


@dataclass(frozen=True)
class IssuedCertificate:
    """A key and its certificate, signed by a :class:`CertificateAuthority`."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    ca: x509.Certificate

    @property
    def key_pem(self) -> str:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    @property
    def chain_pem(self) -> str:
        """The certificate, then the CA's."""
        return "".join(
            cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
            for cert in (self.certificate, self.ca)
        )

    def write_pem(self, directory: Path, name: str) -> tuple[Path, Path]:
        """``<name>.key`` and ``<name>.crt`` (the chain); returns (key, certificate)."""
        key, cert = directory / f"{name}.key", directory / f"{name}.crt"
        key.write_text(self.key_pem)
        key.chmod(0o600)
        cert.write_text(self.chain_pem)
        return key, cert

    def write_keystore_pem(self, path: Path) -> Path:
        """Key and chain in one file: a PEM keystore at ``ssl.keystore.location``."""
        path.write_text(self.key_pem + self.chain_pem)
        path.chmod(0o600)
        return path

    def write_pkcs12(self, path: Path, password: str) -> Path:
        data = pkcs12.serialize_key_and_certificates(
            b"strom",
            self.key,
            self.certificate,
            [self.ca],
            serialization.BestAvailableEncryption(password.encode()),
        )
        path.write_bytes(data)
        return path


class CertificateAuthority:
    """A self-signed CA that issues server and client certificates."""

    def __init__(self, common_name: str = "strom test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self.certificate = (
            _builder(name, name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> str:
        return self.certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")

    def write_pem(self, path: Path) -> Path:
        path.write_text(self.pem)
        return path

    def write_truststore_pkcs12(self, path: Path, password: str) -> Path:
        data = pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(self.certificate, b"ca")],
            serialization.BestAvailableEncryption(password.encode()),
        )
        path.write_bytes(data)
        return path

    def issue(
        self,
        subject: str | x509.Name,
        *,
        hosts: tuple[str, ...] = (),
        client: bool = False,
    ) -> IssuedCertificate:
        """A certificate for ``subject`` (a common name, or a whole name); ``hosts`` go into
        the subject alternative names. A server certificate serves clients too (a broker
        presents it when it connects to another node that asks for one)."""
        name = (
            subject
            if isinstance(subject, x509.Name)
            else x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        )
        key = ec.generate_private_key(ec.SECP256R1())
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        if not client:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        builder = _builder(name, self.certificate.subject, key.public_key()).add_extension(
            x509.ExtendedKeyUsage(usages), critical=False
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(host) for host in hosts]),
                critical=False,
            )
        certificate = builder.sign(self.key, hashes.SHA256())
        return IssuedCertificate(key, certificate, self.certificate)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
