"""JWS signatures (RFC 7515, RFC 7518) with the public keys of a JSON Web Key Set (RFC 7517),
for the algorithms Kafka's OAUTHBEARER validator (jose4j) takes from a JWKS: RS256, RS384,
RS512 (RSA PKCS #1 v1.5), PS256, PS384, PS512 (RSA-PSS) and ES256, ES384, ES512 (ECDSA on
P-256, P-384, P-521, the signature as R and S side by side). ``none`` is never one of them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

__all__ = ["ALGORITHMS", "Jwk", "PublicKey", "b64decode", "parse_jwk", "verify"]

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

_HASHES: Final[Mapping[str, Callable[[], hashes.HashAlgorithm]]] = {
    "256": hashes.SHA256,
    "384": hashes.SHA384,
    "512": hashes.SHA512,
}
_CURVES: Final[Mapping[str, type[ec.EllipticCurve]]] = {
    "P-256": ec.SECP256R1,
    "P-384": ec.SECP384R1,
    "P-521": ec.SECP521R1,
}
_EC_ALGORITHMS: Final = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
ALGORITHMS: Final = frozenset(
    {f"{family}{bits}" for family in ("RS", "PS") for bits in _HASHES} | set(_EC_ALGORITHMS)
)


@dataclass(frozen=True, slots=True)
class Jwk:
    """A signing key of the set."""

    kid: str | None
    key: PublicKey

    def suits(self, algorithm: str) -> bool:
        """Can it check a signature of ``algorithm`` (its type, and its curve for ECDSA)?"""
        curve = _EC_ALGORITHMS.get(algorithm)
        if curve is not None:
            return isinstance(self.key, ec.EllipticCurvePublicKey) and isinstance(
                self.key.curve, _CURVES[curve]
            )
        return algorithm in ALGORITHMS and isinstance(self.key, rsa.RSAPublicKey)


def b64decode(text: str) -> bytes:
    """base64url without padding (raises binascii.Error or ValueError)."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _number(text: Any) -> int:
    if not isinstance(text, str):
        raise TypeError(f"expected a base64url number, got {text!r}")
    return int.from_bytes(b64decode(text), "big")


def parse_jwk(fields: Mapping[str, Any]) -> Jwk | None:
    """The signing key of one JWK; None for a key strom does not check signatures with (an
    encryption key, a symmetric one); raises ValueError, KeyError or TypeError when malformed."""
    if fields.get("use", "sig") != "sig":
        return None
    kid = fields.get("kid")
    if fields.get("kty") == "RSA":
        numbers = rsa.RSAPublicNumbers(_number(fields["e"]), _number(fields["n"]))
        return Jwk(kid, numbers.public_key())
    if fields.get("kty") == "EC":
        curve = _CURVES.get(fields.get("crv", ""))
        if curve is None:
            return None
        point = ec.EllipticCurvePublicNumbers(_number(fields["x"]), _number(fields["y"]), curve())
        return Jwk(kid, point.public_key())
    return None


def verify(algorithm: str, key: PublicKey, signing_input: bytes, signature: bytes) -> bool:
    """Is ``signature`` the JWS signature of ``signing_input`` by ``key`` (which suits
    ``algorithm``)?"""
    digest = _HASHES[algorithm[2:]]()
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            size = (key.curve.key_size + 7) // 8
            if len(signature) != 2 * size:
                return False
            r, s = (int.from_bytes(signature[i : i + size], "big") for i in (0, size))
            key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(digest))
        elif algorithm.startswith("PS"):
            pss = padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
            key.verify(signature, signing_input, pss, digest)
        else:
            key.verify(signature, signing_input, padding.PKCS1v15(), digest)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True
