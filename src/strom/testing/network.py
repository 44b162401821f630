"""Network faults between the nodes of a :class:`~strom.testing.netns.NamespaceNetwork`, as
Jepsen's nemesis makes them: partitions (nftables rules in the nodes' namespaces that drop
packets silently, both ways) and slow links (``tc tbf`` on a node's veth pair).

The host (tests, clients) always reaches every node: only node-to-node traffic is cut. Every
call is idempotent, and :meth:`NetworkNemesis.heal` removes every rule and every shaping.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from strom.testing.netns import NamespaceNetwork, run

__all__ = ["NetworkNemesis"]

_TABLE = "inet strom_nemesis"


class NetworkNemesis:
    """``nemesis.split([{1, 2}, {3, 1001}])``, ``nemesis.isolate(3)``, ``nemesis.slow(2)``,
    ``nemesis.heal()``."""

    def __init__(self, network: NamespaceNetwork) -> None:
        self.network = network

    # --- partitions ----------------------------------------------------------------------------

    def split(self, groups: Iterable[Iterable[int]]) -> None:
        """Nodes in different groups cannot reach each other; the nodes named in no group make
        one more group. Replaces the partition in force."""
        sets = [set(group) for group in groups]
        named = [node_id for group in sets for node_id in group]
        unknown = set(named) - set(self.network.node_ids)
        if unknown or len(named) != len(set(named)):
            raise ValueError(f"groups must name distinct nodes of {self.network.node_ids}")
        sets.append(set(self.network.node_ids) - set(named))
        for group in sets:
            others = [n for n in self.network.node_ids if n not in group]
            for node_id in group:
                self._drop(node_id, [self.network.address(n) for n in others])

    def isolate(self, node_id: int) -> None:
        """The node reaches no other node, and none reaches it."""
        self.split([{node_id}])

    # --- slow links ----------------------------------------------------------------------------

    def slow(
        self,
        node_id: int,
        *,
        rate_kbit: int = 1000,
        burst_bytes: int = 16_384,
        latency_ms: int = 50,
    ) -> None:
        """Everything to and from the node passes a token bucket of ``rate_kbit`` (``burst_bytes``
        at full speed); a packet that would wait more than ``latency_ms`` for tokens is dropped
        (tbf's latency, not an added delay: this kernel has no netem)."""
        shaping = ["tbf", "rate", f"{rate_kbit}kbit", "burst", str(burst_bytes)]
        shaping += ["latency", f"{latency_ms}ms"]
        for tc, device in self._ends(node_id):
            run([*tc, "qdisc", "replace", "dev", device, "root", *shaping])

    def fast(self, node_id: int) -> None:
        """Remove the node's slow link."""
        for tc, device in self._ends(node_id):
            shown = run([*tc, "-j", "qdisc", "show", "dev", device, "root"])
            if any(qdisc["kind"] == "tbf" for qdisc in json.loads(shown or "[]")):
                run([*tc, "qdisc", "delete", "dev", device, "root"])

    # --- both ----------------------------------------------------------------------------------

    def heal(self) -> None:
        """Every node reaches every node again, at full speed."""
        for node_id in self.network.node_ids:
            self._drop(node_id, [])
            self.fast(node_id)

    def _drop(self, node_id: int, addresses: list[str]) -> None:
        """Replace the node's rules: drop every packet from or to ``addresses``."""
        script = f"table {_TABLE}\ndelete table {_TABLE}\n"  # made if missing, then removed
        if addresses:
            peers = ", ".join(addresses)
            script += (
                f"table {_TABLE} {{\n"
                "  chain input { type filter hook input priority 0; policy accept;\n"
                f"    ip saddr {{ {peers} }} drop; }}\n"
                "  chain output { type filter hook output priority 0; policy accept;\n"
                f"    ip daddr {{ {peers} }} drop; }}\n"
                "}\n"
            )
        run(self.network.command(node_id, ["nft", "-f", "-"]), stdin=script)

    def _ends(self, node_id: int) -> list[tuple[list[str], str]]:
        """The node's veth pair as (the ``tc`` that reaches it, device): the end in its
        namespace (what it sends), the end on the bridge (what it receives)."""
        outer, inner = self.network.veths(node_id)
        return [(["tc", "-n", self.network.namespace(node_id)], inner), (["tc"], outer)]
