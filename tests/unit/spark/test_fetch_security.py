"""The readers' own Fetch connections refuse, by name, the librdkafka settings they cannot
honour (``strom.spark.fetch.fetch_security``), before a task would fail its TLS handshake."""

from __future__ import annotations

import pytest

from strom.spark.fetch import fetch_security


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"ssl.keystore.location": "/x.p12"}, "kafka.ssl.keystore.location"),
        ({"ssl.key.pem": "-----BEGIN"}, "kafka.ssl.key.pem"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "SASL GSSAPI"),
    ],
)
def test_settings_the_readers_cannot_use_are_refused_by_name(
    settings: dict[str, str], refused: str
) -> None:
    with pytest.raises(ValueError, match=refused):
        fetch_security(settings)
