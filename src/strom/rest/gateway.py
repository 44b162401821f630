"""The proxy's Kafka clients (librdkafka's), awaited from the HTTP handlers: an admin client
and a producer per login (one pair when principals are not propagated), made on first use.
The producer's delivery reports are served on the event loop (no thread of its own whose every
report would take the GIL from the loop) and resolve asyncio futures; a full send queue makes
the sender wait instead of growing memory."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final, TypeVar

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient

from strom.rest.settings import RestSettings

__all__ = ["AsyncProducer", "KafkaClients", "Login", "blocking", "result"]

T = TypeVar("T")
Login = tuple[str, str] | None
"""An HTTP user's name and password when principals are propagated; None: the proxy's own."""

REPORTS_EVERY_S: Final = 0.001
"""How often the loop serves delivery reports while records await them."""
QUEUE_FULL_WAIT_S: Final = 0.005


class AsyncProducer:
    """A librdkafka producer whose ``send`` is awaited until the record is acknowledged.
    Delivery reports are served on the loop of the records' senders, by a task that runs
    while any record awaits its report."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._producer = Producer({"linger.ms": 5, "acks": "all", **config})
        self._reports: asyncio.Task[None] | None = None

    def _serve_reports(self) -> None:
        """Make sure the records just handed over get their reports."""
        if self._reports is None or self._reports.done():
            self._reports = asyncio.get_running_loop().create_task(self._report())

    async def _report(self) -> None:
        while len(self._producer):  # records queued or awaiting their report
            self._producer.poll(0)
            await asyncio.sleep(REPORTS_EVERY_S)

    async def submit(
        self,
        topic: str,
        *,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, str | bytes | None]],
        timestamp_ms: int | None,
        on_delivery: Callable[[KafkaError | None, Message], None],
    ) -> None:
        """Hand a record to librdkafka; ``on_delivery`` is called on the loop with its
        delivery report. Waits only while librdkafka's queue is full."""
        extra: dict[str, Any] = {}
        if partition is not None:
            extra["partition"] = partition
        if timestamp_ms is not None:
            extra["timestamp"] = timestamp_ms
        while True:
            try:
                self._producer.produce(
                    topic, value, key, headers=headers, on_delivery=on_delivery, **extra
                )
                self._serve_reports()
                return
            except BufferError:  # the queue is full: wait for deliveries to drain it
                await asyncio.sleep(QUEUE_FULL_WAIT_S)

    async def submit_batch(self, topic: str, messages: list[dict[str, Any]]) -> None:
        """Hand records to librdkafka in one call (``produce_batch``: no headers), each dict's
        ``callback`` called on the loop with its delivery report, or at once with the error
        that kept it out of the queue. Waits only while librdkafka's queue is full."""
        while messages:
            self._producer.produce_batch(topic, messages)
            self._serve_reports()
            full = []
            for message in messages:
                error = message.pop("_error", None)
                if error is None:
                    continue
                if error.code() == KafkaError._QUEUE_FULL:
                    full.append(message)
                else:
                    message["callback"](error, None)
            messages = full
            if messages:  # wait for deliveries to drain the queue
                await asyncio.sleep(QUEUE_FULL_WAIT_S)

    async def send(
        self,
        topic: str,
        *,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, str | bytes | None]],
        timestamp_ms: int | None,
    ) -> Message:
        """Send one record and wait until it is acknowledged."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Message] = loop.create_future()

        def report(error: KafkaError | None, message: Message) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(KafkaException(error))
            else:
                done.set_result(message)

        await self.submit(
            topic, partition=partition, key=key, value=value, headers=headers,
            timestamp_ms=timestamp_ms, on_delivery=report,
        )  # fmt: skip
        return await done

    def close(self) -> None:
        """Once the loop has stopped: the records still queued are sent, their reports (to
        requests no longer served) dropped."""
        with contextlib.suppress(RuntimeError):  # a report to the stopped loop ends the wait
            self._producer.flush(5)
        self._producer.close()


class KafkaClients:
    """The clients of each login, made on first use and kept until ``close``."""

    def __init__(self, settings: RestSettings) -> None:
        self._settings = settings
        self._admins: dict[Login, AdminClient] = {}
        self._producers: dict[Login, AsyncProducer] = {}
        self._lock = threading.Lock()

    def admin(self, login: Login) -> AdminClient:
        with self._lock:
            if login not in self._admins:
                self._admins[login] = AdminClient(self.config(login))
            return self._admins[login]

    def producer(self, login: Login) -> AsyncProducer:
        with self._lock:
            if login not in self._producers:
                self._producers[login] = AsyncProducer(self.config(login))
            return self._producers[login]

    def config(self, login: Login) -> dict[str, Any]:
        """The librdkafka settings of ``login``'s clients."""
        return {"log_level": 3, **self._settings.client_config(login)}

    def close(self) -> None:
        for producer in self._producers.values():
            producer.close()
        self._producers.clear()
        self._admins.clear()


async def result(future: Future[T]) -> T:
    """An admin call's answer, awaited."""
    return await asyncio.wrap_future(future)


async def blocking(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A blocking client call run in a worker thread."""
    return await asyncio.to_thread(call, *args, **kwargs)
