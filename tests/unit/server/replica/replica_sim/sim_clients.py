"""The replica simulation's coordinator clients, over the brokers' real group and transaction
coordinator runtimes (``sim_broker``), as a handler calls them:

- a consumer of group ``g`` commits ever larger offsets of ``orders-0`` (OffsetCommit, one at a
  time) to the broker it thinks coordinates the group;
- a transactional producer (a new instance each time: InitProducerId bumps the epoch) adds
  ``orders-0`` and ``orders-1`` to a transaction (AddPartitionsToTxn), writes one
  transactional batch to each partition's leader (acks=all) and ends it with EndTxn: commit
  when both writes were acknowledged (mostly), else abort; the coordinator writes the markers
  (``txn_markers``, to other brokers through WriteTxnMarkers).

A request to a dead broker, or one not answered within :data:`CLIENT_TIMEOUT_MS` (the broker
crashed meanwhile, its answer was dropped), is given up on; the next try picks a coordinator
again. What the coordinators acknowledge goes to the invariants (``sim_invariants``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.offset_commit.v9 import request as commit
from kio.schema.offset_commit.v9 import response as commit_answer
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64
from sim_controller import BROKERS, DATA, OFFSETS_TP, TP, TXN_TP
from sim_faults import PRODUCE_TIMEOUT_MS

from strom.common import ErrorCode, TopicPartition
from strom.coordinator.txn import InitProducerIdResult
from strom.protocol.records import Record, build_batch
from strom.server.coordinator.coordinator_runtime import CoordinatorRuntime

if TYPE_CHECKING:
    from replica_simulation import Simulation
    from sim_broker import SimBroker

T = TypeVar("T")

GROUP = "g"
TRANSACTIONAL_ID = "t"
TXN_TIMEOUT_MS = 2_000
CLIENT_TIMEOUT_MS = 3_000


class SimClients:
    """The group consumer and the transactional producer (see the module doc)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.tasks: set[asyncio.Task[None]] = set()
        self.committing = False
        self.offsets = 0
        """The last offset the consumer asked to commit."""
        self.transacting = False
        self.transactions = 0
        self.producer_ids = 1_000

    def start(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        task = asyncio.get_running_loop().create_task(work())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def _coordinator(self, tp: TopicPartition) -> SimBroker:
        """The broker a client takes for the leader of ``tp`` (its coordinator): mostly the
        controller's, else a cut-off one (stale metadata) or any."""
        sim = self.sim
        leader = sim.controller.registration_of(tp).leader
        draw = sim.rng.random()
        if sim.network.cut_off and draw < 0.2:
            return sim.brokers[next(iter(sim.network.cut_off))]
        if leader in sim.brokers and draw < 0.85:
            return sim.brokers[leader]
        return sim.brokers[sim.rng.choice(BROKERS)]

    async def _ask(
        self,
        broker: SimBroker,
        runtime: CoordinatorRuntime[Any, Any],
        operation: Callable[[Callable[[T], None]], None],
    ) -> T | None:
        """``operation`` on ``broker``'s coordinator ``runtime``, as a handler runs it; None
        when its answer does not come in time, comes from an earlier life, or is lost."""
        sim = self.sim
        life = broker.life
        call = asyncio.get_running_loop().create_task(runtime.call(operation))
        if not await _within(sim, call, CLIENT_TIMEOUT_MS) or broker.life != life:
            call.cancel()
            return None
        if call.cancelled() or call.exception() is not None:
            return None
        if sim.rng.random() < sim.faults.drop:
            return None  # the answer is lost on the way back
        return call.result()

    # --- the group consumer --------------------------------------------------------------------

    def commit_offset(self) -> None:
        if not self.committing:
            self.committing = True
            self.start(self._commit_offset)

    async def _commit_offset(self) -> None:
        try:
            self.offsets += 1
            offset = self.offsets
            request = commit.OffsetCommitRequest(
                group_id=GroupId(GROUP),
                generation_id_or_member_epoch=i32(-1),
                member_id="",
                topics=(
                    commit.OffsetCommitRequestTopic(
                        name=TopicName(TP.topic),
                        partitions=(
                            commit.OffsetCommitRequestPartition(
                                partition_index=i32(TP.partition),
                                committed_offset=i64(offset),
                                committed_metadata=None,
                            ),
                        ),
                    ),
                ),
            )
            broker = self._coordinator(OFFSETS_TP)
            if not broker.alive:
                return
            groups = broker.groups
            now = self.sim.clock.now_ms()
            response: commit_answer.OffsetCommitResponse | None = await self._ask(
                broker,
                groups,
                lambda reply: groups.coordinator.offset_commit(request, now_ms=now, reply=reply),
            )
            if response is not None:
                [topic] = response.topics
                [answer] = topic.partitions
                if answer.error_code is ErrorCode.none:
                    self.sim.invariants.offset_committed(broker, offset)
        finally:
            self.committing = False

    # --- the transactional producer -------------------------------------------------------------

    def transact(self) -> None:
        if not self.transacting:
            self.transacting = True
            self.start(self._transact)

    async def _transact(self) -> None:
        try:
            await self._transaction()
        finally:
            self.transacting = False

    async def _transaction(self) -> None:
        sim = self.sim
        broker = self._coordinator(TXN_TP)
        if not broker.alive:
            return
        txns = broker.txns
        coordinator = txns.coordinator
        candidate = None
        if coordinator.needs_producer_id(TRANSACTIONAL_ID):
            self.producer_ids += 1
            candidate = self.producer_ids
        now = sim.clock.now_ms()
        init: InitProducerIdResult | None = await self._ask(
            broker,
            txns,
            lambda reply: coordinator.init_producer_id(
                TRANSACTIONAL_ID,
                timeout_ms=TXN_TIMEOUT_MS,
                producer_id=-1,
                producer_epoch=-1,
                new_producer_id=candidate,
                now_ms=now,
                reply=reply,
            ),
        )
        if init is None or init.error is not ErrorCode.none:
            return
        producer = (init.producer_id, init.producer_epoch)
        added: ErrorCode | None = await self._ask(
            broker,
            txns,
            lambda reply: coordinator.add_partitions(
                TRANSACTIONAL_ID,
                producer_id=producer[0],
                producer_epoch=producer[1],
                partitions=DATA,
                now_ms=sim.clock.now_ms(),
                reply=reply,
            ),
        )
        if added is not ErrorCode.none:
            return
        self.transactions += 1
        number = self.transactions
        written = await asyncio.gather(*(self._produce(tp, number, producer) for tp in DATA))
        commit = all(written) and sim.rng.random() < 0.7
        sim.invariants.transaction_ending(number, commit=commit)
        ended: ErrorCode | None = await self._ask(
            broker,
            txns,
            lambda reply: coordinator.end_txn(
                TRANSACTIONAL_ID,
                producer_id=producer[0],
                producer_epoch=producer[1],
                commit=commit,
                now_ms=sim.clock.now_ms(),
                reply=reply,
            ),
        )
        if ended is ErrorCode.none:
            sim.invariants.transaction_ended(number, commit=commit)

    async def _produce(self, tp: TopicPartition, number: int, producer: tuple[int, int]) -> bool:
        """The transaction's batch to ``tp``'s leader (as the client sees it): whether it was
        acknowledged (acks=all)."""
        broker = self._coordinator(tp)
        if not broker.alive:
            return False
        records = [Record(0, 1_000, None, f"txn{number}".encode())]
        data = build_batch(
            records,
            producer_id=producer[0],
            producer_epoch=producer[1],
            base_sequence=0,
            is_transactional=True,
        )
        [(_, result)] = broker.manager.append_to_local_log([(tp, data)], required_acks=-1)
        if result.error is not ErrorCode.none:
            return False
        life = broker.life
        outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(outcomes: dict[TopicPartition, ErrorCode]) -> None:
            if not outcome.done():
                outcome.set_result(outcomes[tp] is ErrorCode.none and broker.life == life)

        broker.manager.when_acknowledged(
            {tp: result.last_offset + 1}, timeout_ms=PRODUCE_TIMEOUT_MS, callback=answered
        )
        if not await _within(self.sim, outcome, CLIENT_TIMEOUT_MS):
            return False
        return outcome.result()


async def _within(sim: Simulation, waited: asyncio.Future[Any], timeout_ms: int) -> bool:
    """Whether ``waited`` is done within ``timeout_ms`` of virtual time."""
    expired: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def expire() -> None:
        if not expired.done():
            expired.set_result(None)

    handle = sim.timer.call_later(timeout_ms, expire)
    await asyncio.wait((waited, expired), return_when=asyncio.FIRST_COMPLETED)
    handle.cancel()
    return waited.done()
