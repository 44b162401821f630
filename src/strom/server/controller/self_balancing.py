"""``strom.balancer.enable``: the active controller keeps the cluster's load even
(Confluent's Self-Balancing Clusters, ``confluent.balancer.enable``).

A thin shell around :class:`strom.balancer.SelfBalancer`: every
``strom.balancer.check.interval.ms``, at once when the set of active brokers changes (a broker
added), and every second while a plan is being carried out, it builds the cluster's model from
the metadata image (``strom.controller.balancer_model``), asks the core for the next step and
carries it out as ``strom balance execute`` does: the throttles of the moves just done removed
and their preferred leaders elected, then the next ``strom.balancer.max.concurrent.moves`` moves
started as partition reassignments under replication throttles
(``strom.balancer.throttle.bytes.per.second``). A broker away for longer than
``strom.balancer.heal.broker.failure.threshold.ms`` is drained (self-healing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from strom.balancer import BalanceError, Move, SelfBalancer, Step
from strom.common import Clock
from strom.controller import ElectionType, ElectLeadersRequest, ReassignmentRequest
from strom.controller.balancer_model import away_brokers, cluster_model, throttle_request
from strom.controller.reassignment import ongoing_reassignments
from strom.server.controller.controller_server import ControllerServer, NotControllerError

__all__ = ["SelfBalancing"]

log = logging.getLogger(__name__)

_BUSY_CHECK_MS = 1000
_POLL_S = 0.5


class SelfBalancing:
    """One run per term as the active controller (``ControllerServer.run_while_active``)."""

    def __init__(
        self,
        controller: ControllerServer,
        *,
        clock: Clock,
        check_interval_ms: int,
        max_concurrent_moves: int,
        throttle: int | None,
        heal_after_ms: int | None = None,
    ) -> None:
        """``throttle``: bytes/s while moves run (None: unthrottled); ``heal_after_ms``: how
        long a broker may be away before it is drained (None: never)."""
        self._controller = controller
        self._heal_after_ms = heal_after_ms
        self._throttle = throttle
        self._clock = clock
        self._interval_ms = check_interval_ms
        self._max_moves = max_concurrent_moves

    async def run(self) -> None:
        """Check, and carry out what the core decides, until this node is no longer active."""
        balancer = SelfBalancer(
            max_concurrent_moves=self._max_moves, heal_after_ms=self._heal_after_ms
        )
        failed: frozenset[int] = frozenset()
        brokers: frozenset[int] | None = None
        next_check = self._clock.monotonic_ms() + self._interval_ms
        refused: str | None = None
        while True:
            await asyncio.sleep(_POLL_S)
            image = self._controller.image
            active = frozenset(b for b, r in image.cluster.brokers.items() if r.active)
            now = self._clock.monotonic_ms()
            if active == brokers and now < next_check:
                continue
            if brokers is not None and active - brokers:
                log.info("self-balancing: broker(s) %s joined", sorted(active - brokers))
            brokers = active
            try:
                # planning thousands of partitions takes seconds: off the event loop, so that
                # the controller keeps answering heartbeats meanwhile
                step = await asyncio.to_thread(
                    balancer.step,
                    cluster_model(image, self._controller.loads),
                    reassigning=bool(ongoing_reassignments(image)),
                    samples=dict(self._controller.loads.samples),
                    away=away_brokers(image),
                    now_ms=now,
                )
            except BalanceError as error:
                if str(error) != refused:
                    log.warning("self-balancing cannot plan: %s", error)
                refused = str(error)
                next_check = now + self._interval_ms
                continue
            refused = None
            if balancer.failed != failed:
                failed = balancer.failed
                if failed:
                    log.warning(
                        "self-healing: broker(s) %s away for more than %d ms; moving their "
                        "replicas to live brokers",
                        sorted(failed),
                        self._heal_after_ms,
                    )
            try:
                await self._carry_out(step)
            except NotControllerError:
                return
            busy = step.moves or balancer.pending or ongoing_reassignments(self._controller.image)
            wait_ms = min(_BUSY_CHECK_MS, self._interval_ms) if busy else self._interval_ms
            next_check = now + wait_ms

    async def _carry_out(self, step: Step) -> None:
        if step.done:
            if self._throttle is not None:
                await self._controller.incremental_alter_configs(throttle_request(step.done, None))
            if step.elect:
                await self._controller.elect_leaders(
                    ElectLeadersRequest(ElectionType.PREFERRED, list(step.elect))
                )
            log.info("self-balancing: %d partition move(s) done", len(step.done))
        if step.moves:
            if self._throttle is not None:
                await self._controller.incremental_alter_configs(
                    throttle_request(step.moves, self._throttle)
                )
            await self._start(step.moves)

    async def _start(self, moves: Sequence[Move]) -> None:
        results = await self._controller.alter_reassignments(
            [ReassignmentRequest(m.tp, m.after) for m in moves]
        )
        for move, result in zip(moves, results, strict=True):
            if result.error.is_failure:
                log.warning(
                    "self-balancing: cannot move %s: %s",
                    move.tp,
                    result.error.message or result.error.code.name,
                )
            else:
                log.info(
                    "self-balancing: moving %s from %s to %s",
                    move.tp,
                    list(move.before),
                    list(move.after),
                )
