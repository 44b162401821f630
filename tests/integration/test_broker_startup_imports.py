"""A fresh interpreter's first ``strom.testing.Broker()`` imports what serving needs and no
more: the handlers of an API (and the kio schemas they import) load on its first request, TLS
and JWKS code only for listeners that use them, and a follower's Fetch and ListOffsets requests
only when the broker follows a leader, and each kio schema where its message is first sent or
answered (Raft's, the group coordinator's, an ISR change, a forwarded request...)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TIMEOUT_S = float(os.environ.get("STROM_TEST_STARTUP_TIMEOUT_S", "60"))

CODE = """
import sys
from confluent_kafka.admin import AdminClient
from strom.testing import Broker
with Broker() as broker:
    print(" ".join(sorted(sys.modules)))
    topics = AdminClient(broker.admin_config()).list_topics(timeout=10).topics
    print(" ".join(sorted(sys.modules)))
"""

DEFERRED = (
    "strom.server.handlers.metadata",
    "strom.server.handlers.fetch",
    "strom.server.controller.handlers.create_topics",
    "strom.server.handlers.join_group",
    "strom.server.handlers.end_txn",
    "kio.schema.create_acls.v3.response",
    "kio.schema.fetch.v15.request",
    "kio.schema.list_offsets.v7.request",
    "kio.schema.vote.v0.request",  # Raft's requests and answers: a lone voter has no peer
    "kio.schema.begin_quorum_epoch.v0.request",
    "kio.schema.fetch.v12.request",
    "kio.schema.describe_quorum.v2.response",
    "kio.schema.add_raft_voter.v0.response",
    "kio.schema.offset_commit.v9.response",  # the group coordinator's answers
    "kio.schema.join_group.v9.response",
    "kio.schema.write_txn_markers.v1.request",  # sent to another broker's partitions only
    "kio.schema.alter_partition.v3.request",  # an ISR change
    "kio.schema.create_topics.v7.request",  # a topic created automatically
    "kio.schema.allocate_producer_ids.v0.request",  # the first producer id
    "kio.schema.envelope.v0.request",  # a request forwarded to the controller
    "kio.schema.api_versions.v4.response",  # v0 comes with the request parser
    "kio.schema.sasl_handshake.v1.request",  # a SASL client's login
    "cryptography",
    "strom.security.jwks",
)


def test_a_started_broker_has_imported_no_handler_before_its_api_is_used() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    result = subprocess.run(
        [sys.executable, "-c", CODE],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        check=True,
    )
    started, answered = (set(line.split()) for line in result.stdout.splitlines())
    assert started.isdisjoint(DEFERRED), sorted(started & set(DEFERRED))
    assert "strom.server.handlers.metadata" in answered
    assert "strom.server.handlers.fetch" not in answered
