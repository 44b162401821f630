"""Every setting strom knows, defined once: Kafka's name, type, default, validator and doc line.

Two scopes, as in Kafka: server settings (``server.properties``, ``--override``) and topic settings
(CreateTopics/AlterConfigs). Most topic settings take their default from a server setting
(``retention.ms`` from ``log.retention.ms``); ``TopicSetting.server_default`` names it.

What a setting is lives in ``setting``; Kafka's catalog in ``kafka_settings``. The settings strom
acts on are tables by family (``broker``, ``log``, ``coordinators``, ``cluster``,
``replication``, ``security``), merged over the catalog in ``server_settings`` and
``topic_settings``; ``catalogued`` names the catalog's settings strom acts on as they are, and
those it only records. ``ServerConfig`` and ``TopicConfig`` hold validated values;
``properties`` reads ``.properties`` files.
"""

from __future__ import annotations

from strom.config.catalogued import RECORDED_ONLY
from strom.config.properties import load_properties, parse_properties
from strom.config.server_config import ServerConfig, unknown_settings
from strom.config.server_settings import SERVER_SETTINGS
from strom.config.setting import ConfigError, ConfigType, Setting
from strom.config.topic_config import TopicConfig, validate_topic_configs
from strom.config.topic_settings import TOPIC_SETTINGS

__all__ = [
    "RECORDED_ONLY",
    "SERVER_SETTINGS",
    "TOPIC_SETTINGS",
    "ConfigError",
    "ConfigType",
    "ServerConfig",
    "Setting",
    "TopicConfig",
    "load_properties",
    "parse_properties",
    "unknown_settings",
    "validate_topic_configs",
]
