"""The server's settings from the command line and the environment (``strom.cli.settings``)."""

from __future__ import annotations

from strom.cli.settings import build_config


def test_the_jaas_file_comes_from_kafka_opts_unless_set() -> None:
    opts = {"KAFKA_OPTS": "-Xmx1g -Djava.security.auth.login.config=/etc/kafka/jaas.conf"}
    setting = "java.security.auth.login.config"
    config = build_config(
        properties_file=None, overrides=(), data_dir=None, listener=None, environ=opts
    )
    assert config[setting] == "/etc/kafka/jaas.conf"
    config = build_config(
        properties_file=None,
        overrides=(f"{setting}=/mine.conf",),
        data_dir=None,
        listener=None,
        environ=opts,
    )
    assert config[setting] == "/mine.conf"
    empty = build_config(
        properties_file=None, overrides=(), data_dir=None, listener=None, environ={}
    )
    assert empty[setting] is None
