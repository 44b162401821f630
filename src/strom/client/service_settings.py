"""What the settings of the services that are clients of strom share: integer settings, and,
for those on Spark (Connect's worker, the SQL server), the settings of their own clients and of
the ``strom`` data source's, from one cluster address and the ``security.*``, ``sasl.*`` and
``ssl.*`` settings by Java's names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from strom.client.java_tls import tls_settings

__all__ = ["ServiceClients", "int_setting"]


def int_setting(values: Mapping[str, str], name: str, default: int, error: type[ValueError]) -> int:
    """The integer setting ``name`` (``default`` when not given); one that is not an integer
    raises ``error`` naming it."""
    text = values.get(name)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise error(f"{name}: expected an integer, got {text!r}") from None


class ServiceClients:
    """A base for the settings of a service on Spark: they have ``bootstrap_servers`` and
    ``client_security``, and ``error`` is what a setting that cannot be used raises."""

    bootstrap_servers: str
    client_security: Mapping[str, str]
    error: ClassVar[type[ValueError]] = ValueError

    def client_config(self) -> dict[str, str]:
        """The settings of the service's own (librdkafka) clients."""
        tls, problem = tls_settings(self.client_security)
        if problem is not None:
            raise self.error(problem)
        plain = {
            k: v
            for k, v in self.client_security.items()
            if k.startswith(("security.", "sasl.")) or k == "ssl.key.password"
        }
        return {"bootstrap.servers": self.bootstrap_servers, **plain, **tls}

    def spark_options(self) -> dict[str, str]:
        """The ``strom`` source's and sink's options that reach the service's cluster."""
        return {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            **{f"kafka.{k}": v for k, v in self.client_security.items()},
        }
