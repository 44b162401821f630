"""Signing keys for OAUTHBEARER tests: RSA and EC private keys by kid, the JSON Web Key Set
that publishes them, and JWTs signed with them (RS, PS and ES algorithms)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

CURVES = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
CURVE_NAMES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
HASHES = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}
_ES_BY_CURVE = {curve.name: algorithm for algorithm, curve in CURVES.items()}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(value: int, size: int | None = None) -> str:
    return b64(value.to_bytes(size or (value.bit_length() + 7) // 8, "big"))


class KeySet:
    """Private keys by kid (RSA, or EC for an ES algorithm), served as a JWKS document (with a
    symmetric key beside them, which a validator must pass over)."""

    def __init__(self, *, now: int | None = None) -> None:
        """``now``: the time tokens are issued at (seconds; the clock's when None)."""
        self.keys: dict[str, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey] = {}
        self._now = now

    def add(self, kid: str, algorithm: str = "RS256") -> None:
        curve = CURVES.get(algorithm)
        self.keys[kid] = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if curve is None
            else ec.generate_private_key(curve)
        )

    def document(self) -> bytes:
        keys: list[dict[str, str]] = [{"kty": "oct", "kid": "symmetric", "k": "c2VjcmV0"}]
        for kid, key in self.keys.items():
            if isinstance(key, rsa.RSAPrivateKey):
                numbers = key.public_key().public_numbers()
                keys.append({"kty": "RSA", "kid": kid, "n": number(numbers.n),
                             "e": number(numbers.e)})  # fmt: skip
            else:
                point = key.public_key().public_numbers()
                size = (key.curve.key_size + 7) // 8
                crv = CURVE_NAMES[key.curve.name]
                keys.append({"kty": "EC", "kid": kid, "use": "sig", "crv": crv,
                             "x": number(point.x, size), "y": number(point.y, size)})  # fmt: skip
        return json.dumps({"keys": keys}).encode()

    def token(self, kid: str, algorithm: str | None = None, **claims: Any) -> str:
        """A JWT for ``alice`` valid for ten minutes (``claims`` add or replace claims), signed
        with ``kid``'s key by ``algorithm`` (RS256, or the ES algorithm of an EC key's curve)."""
        key = self.keys[kid]
        if algorithm is None:
            algorithm = (
                "RS256" if isinstance(key, rsa.RSAPrivateKey) else _ES_BY_CURVE[key.curve.name]
            )
        now = int(time.time()) if self._now is None else self._now
        body = {"sub": "alice", "iat": now, "exp": now + 600, **claims}
        header = {"alg": algorithm, "kid": kid, "typ": "JWT"}
        signed = ".".join(b64(json.dumps(part).encode()) for part in (header, body)).encode()
        digest = HASHES[algorithm[2:]]
        if isinstance(key, ec.EllipticCurvePrivateKey):
            r, s = decode_dss_signature(key.sign(signed, ec.ECDSA(digest)))
            size = (key.curve.key_size + 7) // 8
            signature = r.to_bytes(size, "big") + s.to_bytes(size, "big")
        elif algorithm.startswith("PS"):
            pss = padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
            signature = key.sign(signed, pss, digest)
        else:
            signature = key.sign(signed, padding.PKCS1v15(), digest)
        return f"{signed.decode()}.{b64(signature)}"
