"""The proxy's Kafka clients (librdkafka's), awaited from the HTTP handlers: an admin client
and a producer per login (one pair when principals are not propagated), made on first use.
The producer's delivery reports resolve asyncio futures; a full send queue makes the sender
wait instead of growing memory."""

from __future__ import annotations

import asyncio
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

POLL_S: Final = 0.1
QUEUE_FULL_WAIT_S: Final = 0.005


class AsyncProducer:
    """A librdkafka producer whose ``send`` is awaited until the record is acknowledged."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._producer = Producer({"linger.ms": 5, "acks": "all", **config})
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="rest-producer", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(POLL_S)

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
        """Hand a record to librdkafka; ``on_delivery`` is called on the poll thread. Waits
        only while librdkafka's queue is full."""
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
                return
            except BufferError:  # the queue is full: wait for deliveries to drain it
                await asyncio.sleep(QUEUE_FULL_WAIT_S)

    async def submit_batch(self, topic: str, messages: list[dict[str, Any]]) -> None:
        """Hand records to librdkafka in one call (``produce_batch``: no headers), each dict's
        ``callback`` called on the poll thread with its delivery report, or at once with the
        error that kept it out of the queue. Waits only while librdkafka's queue is full."""
        while messages:
            self._producer.produce_batch(topic, messages)
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
            if error is not None:
                loop.call_soon_threadsafe(_fail, done, KafkaException(error))
            else:
                loop.call_soon_threadsafe(_succeed, done, message)

        await self.submit(
            topic, partition=partition, key=key, value=value, headers=headers,
            timestamp_ms=timestamp_ms, on_delivery=report,
        )  # fmt: skip
        return await done

    def close(self) -> None:
        self._closed.set()
        self._poller.join()
        self._producer.flush(5)
        self._producer.close()


def _succeed(future: asyncio.Future[Message], message: Message) -> None:
    if not future.done():
        future.set_result(message)


def _fail(future: asyncio.Future[Message], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


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
