"""The cluster's settings: process roles, the controller quorum, listener names and security
protocols, broker registration and heartbeats, and the metadata log's snapshots."""

from __future__ import annotations

from typing import Final

from strom.config.setting import Setting, at_least, one_of
from strom.config.shorthands import INT, LIST, LONG, STRING, ms

__all__ = ["CLUSTER_SETTINGS"]

_PROTOCOL_MAP_DEFAULT: Final = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)

CLUSTER_SETTINGS: Final = (
    Setting(
        "process.roles",
        LIST,
        (),
        "broker, controller, or both; empty runs a one-node cluster without a controller listener.",
        one_of("broker", "controller"),
        read_only=True,
    ),
    Setting(
        "controller.quorum.voters",
        LIST,
        (),
        "The controller quorum as id@host:port entries.",
        read_only=True,
    ),
    Setting(
        "controller.quorum.bootstrap.servers",
        LIST,
        (),
        "host:port of controllers to find the quorum through (when voters are not listed).",
        read_only=True,
    ),
    Setting(
        "controller.listener.names",
        LIST,
        (),
        "Names of the listeners controllers serve (the first is the one others use).",
        read_only=True,
    ),
    Setting(
        "listener.security.protocol.map",
        STRING,
        _PROTOCOL_MAP_DEFAULT,
        "Listener name to security protocol, as NAME:PROTOCOL entries.",
        read_only=True,
    ),
    Setting(
        "inter.broker.listener.name",
        STRING,
        None,
        "The listener brokers use to reach each other.",
        read_only=True,
    ),
    Setting(
        "security.inter.broker.protocol",
        STRING,
        "PLAINTEXT",
        "Security protocol between brokers when no inter-broker listener name is set.",
        one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        read_only=True,
    ),
    Setting("broker.rack", STRING, None, "The rack of this broker.", read_only=True),
    ms("broker.heartbeat.interval.ms", 2000, "Time between a broker's heartbeats."),
    ms("broker.session.timeout.ms", 9000, "A broker without heartbeats this long is fenced."),
    Setting(
        "broker.heartbeat.connection.close.grace.ms",
        INT,
        100,
        "strom: when a broker's heartbeat connection closes, the controller tries its listeners; "
        "a broker whose listeners all refuse connections (a dead process) and that sends no "
        "heartbeat this long after the close is fenced without waiting for "
        "broker.session.timeout.ms (-1: never).",
        at_least(-1),
        read_only=True,
    ),
    ms(
        "initial.broker.registration.timeout.ms",
        60000,
        "How long a broker tries to register before it gives up.",
    ),
    ms("controller.quorum.election.timeout.ms", 1000, "Election timeout of the quorum."),
    ms("controller.quorum.fetch.timeout.ms", 2000, "A follower without a leader this long votes."),
    ms("controller.quorum.election.backoff.max.ms", 1000, "Longest wait before a new election."),
    ms("controller.quorum.request.timeout.ms", 2000, "Timeout of a quorum request."),
    ms("controller.quorum.retry.backoff.ms", 20, "Wait before retrying a failed quorum request."),
    ms(
        "controller.quorum.append.linger.ms",
        25,
        "Accepted; the leader writes each operation's batch at once.",
    ),
    Setting(
        "metadata.log.segment.bytes",
        INT,
        1073741824,
        "Segment size of the metadata log.",
        at_least(12),
        read_only=True,
    ),
    Setting(
        "metadata.log.max.record.bytes.between.snapshots",
        LONG,
        20971520,
        "Snapshot after this many bytes of new metadata records.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "metadata.log.max.snapshot.interval.ms",
        LONG,
        3600000,
        "Snapshot after this long with new metadata records; 0 never.",
        at_least(0),
        read_only=True,
    ),
    ms(
        "metadata.max.idle.interval.ms",
        500,
        "The active controller appends a no-op record after this long without writes; 0 never.",
    ),
)
