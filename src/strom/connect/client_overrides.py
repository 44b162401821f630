"""The settings of a connector's Kafka clients (no I/O), as Kafka Connect's: the worker's
``producer.*``, ``consumer.*`` and ``admin.*`` settings, then the connector's own
``producer.override.*``, ``consumer.override.*`` and ``admin.override.*`` where the worker's
``connector.client.config.override.policy`` allows them (``All``, Kafka's default since 3.0;
``Principal``: only ``security.protocol``, ``sasl.mechanism`` and ``sasl.jaas.config``;
``None``). They reach the ``strom`` source and sink of the connector's query as ``kafka.*``
options: a sink's consumer reads, a source's producer (and a sink's dead letter queue) writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strom.connect.config_def import Definition, validate

__all__ = ["CLIENTS", "client_options", "overrides_policy", "policy_refusals", "with_overrides"]

CLIENTS = ("producer", "consumer", "admin")
_POLICY_CLASS = "org.apache.kafka.connect.connector.policy.{}ConnectorClientConfigOverridePolicy"
_POLICIES = ("All", "None", "Principal")
_PRINCIPAL = frozenset({"security.protocol", "sasl.mechanism", "sasl.jaas.config"})
_OWN = frozenset({"group.id"})
"""Overrides the connector runtime reads itself (a sink's group), not passed to the client."""


def overrides_policy(text: str) -> str:
    """The policy's name (``All``, ``None``, ``Principal``) from its alias or Kafka's class
    name; a ``ValueError`` naming the setting for anything else."""
    name = text.strip()
    for policy in _POLICIES:
        if name in (policy, _POLICY_CLASS.format(policy)):
            return policy
    raise ValueError(
        f"connector.client.config.override.policy: expected All, None or Principal, got {text}"
    )


def _overrides(config: Mapping[str, str], client: str) -> dict[str, str]:
    prefix = f"{client}.override."
    return {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)}


def policy_refusals(policy: str, config: Mapping[str, str]) -> dict[str, list[str]]:
    """Connect's error of each override in ``config`` the policy forbids, by setting name."""
    refused: dict[str, list[str]] = {}
    for client in CLIENTS:
        for name in _overrides(config, client):
            if policy == "All" or (policy == "Principal" and name in _PRINCIPAL):
                continue
            refused[f"{client}.override.{name}"] = [
                f"The '{policy}' policy does not allow '{name}' to be overridden in the"
                " connector configuration."
            ]
    return refused


def with_overrides(
    infos: dict[str, Any], config: Mapping[str, str], refused: Mapping[str, list[str]]
) -> dict[str, Any]:
    """A ``validate`` answer with an entry for each client override of ``config``, carrying
    the errors ``refused`` names (and counting them)."""
    definitions = [
        Definition(
            f"{client}.override.{name}",
            "STRING",
            None,
            "LOW",
            f"The connector's {client} setting {name}.",
            "Client overrides",
            -1,
            f"{client}.override.{name}",
        )
        for client in CLIENTS
        for name in sorted(_overrides(config, client))
    ]
    if definitions:
        more = validate(infos["name"], definitions, config, refused)
        infos["configs"] += more["configs"]
        infos["groups"] += [group for group in more["groups"] if group not in infos["groups"]]
        infos["error_count"] += more["error_count"]
    return infos


def client_options(
    worker: Mapping[str, str], config: Mapping[str, str], client: str
) -> dict[str, str]:
    """The ``kafka.*`` options of ``client`` for a connector: the worker's ``<client>.*``
    settings, then the connector's ``<client>.override.*``."""
    prefix = f"{client}."
    settings = {k.removeprefix(prefix): v for k, v in worker.items() if k.startswith(prefix)}
    settings.update(_overrides(config, client))
    return {f"kafka.{k}": v for k, v in settings.items() if k not in _OWN}
