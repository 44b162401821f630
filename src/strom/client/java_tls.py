"""Java clients' TLS settings, as Spark users write them (``kafka.ssl.*``), in librdkafka's
names: a PEM truststore becomes ``ssl.ca.location`` (or ``ssl.ca.pem``), a PEM keystore
``ssl.certificate.location`` and ``ssl.key.location`` (or ``ssl.certificate.pem`` and
``ssl.key.pem``); a PKCS12 keystore keeps its names. Java's JKS stores cannot be read: they are
refused with the way out (``keytool -importkeystore -deststoretype PKCS12``, or PEM).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TLS_STORE_SETTINGS", "tls_settings"]

TLS_STORE_SETTINGS = frozenset(
    {
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.endpoint.identification.algorithm",
    }
)
"""The ``kafka.`` options :func:`tls_settings` translates."""


def tls_settings(java: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """librdkafka settings from the Java TLS settings in ``java`` (names without ``kafka.``),
    and the reason they cannot be used (None when they can)."""
    out: dict[str, str] = {}
    trust_type = java.get("ssl.truststore.type", "JKS").upper()
    if "ssl.truststore.location" in java or "ssl.truststore.certificates" in java:
        if trust_type != "PEM":
            return out, (
                f"a {trust_type} truststore cannot be read outside the JVM: give the CA "
                "certificates as PEM ('kafka.ssl.truststore.type' = PEM, or "
                "'kafka.ssl.ca.location')"
            )
        if "ssl.truststore.location" in java:
            out["ssl.ca.location"] = java["ssl.truststore.location"]
        if "ssl.truststore.certificates" in java:
            out["ssl.ca.pem"] = java["ssl.truststore.certificates"]
    key_type = java.get("ssl.keystore.type", "JKS").upper()
    if any(name in java for name in ("ssl.keystore.location", "ssl.keystore.key")):
        if key_type == "PEM":
            if "ssl.keystore.location" in java:
                out["ssl.certificate.location"] = java["ssl.keystore.location"]
                out["ssl.key.location"] = java["ssl.keystore.location"]
            if "ssl.keystore.key" in java:
                out["ssl.key.pem"] = java["ssl.keystore.key"]
                out["ssl.certificate.pem"] = java.get("ssl.keystore.certificate.chain", "")
        elif key_type == "PKCS12":
            out["ssl.keystore.location"] = java["ssl.keystore.location"]
        else:
            return out, (
                f"a {key_type} keystore cannot be read outside the JVM: convert it with "
                "'keytool -importkeystore -deststoretype PKCS12', or use PEM"
            )
    algorithm = java.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:  # Java turns the check off with an empty value
        out["ssl.endpoint.identification.algorithm"] = algorithm or "none"
    return out, None
