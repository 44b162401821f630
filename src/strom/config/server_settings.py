"""Every broker setting: the tables of those strom acts on, over the rest of Kafka's catalog."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final

from strom.config.broker import BROKER_SETTINGS
from strom.config.cluster import CLUSTER_SETTINGS
from strom.config.coordinators import COORDINATOR_SETTINGS
from strom.config.kafka_settings import KAFKA_SETTINGS
from strom.config.log import LOG_SETTINGS
from strom.config.replication import REPLICATION_SETTINGS
from strom.config.security import AUTHORIZER_SETTINGS, LOGIN_CONFIG_SETTING
from strom.config.setting import Setting
from strom.config.shorthands import by_name

__all__ = ["SERVER_SETTINGS", "STROM_SERVER_SETTINGS"]

STROM_SERVER_SETTINGS: Final[Mapping[str, Setting]] = by_name(
    [
        *BROKER_SETTINGS,
        *LOG_SETTINGS,
        *COORDINATOR_SETTINGS,
        *CLUSTER_SETTINGS,
        *REPLICATION_SETTINGS,
        *AUTHORIZER_SETTINGS,
        LOGIN_CONFIG_SETTING,
    ]
)
"""The broker settings strom defines itself; it acts on all but ``DEFINED_NOT_ACTED_ON``."""

SERVER_SETTINGS: Final[Mapping[str, Setting]] = {
    **KAFKA_SETTINGS.broker,
    **{
        name: dataclasses.replace(setting, per_broker=KAFKA_SETTINGS.broker[name].per_broker)
        if name in KAFKA_SETTINGS.broker
        else setting
        for name, setting in STROM_SERVER_SETTINGS.items()
    },
}
"""Every broker setting: strom's own, then the rest of Kafka's catalog (recorded only)."""
