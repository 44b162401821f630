"""The v2 API's consumer instances: a librdkafka consumer per instance, made by ``POST
/consumers/{group}`` and driven by later requests (subscribe or assign, seek, read records,
commit), each instance's calls one at a time in a worker thread. An instance belongs to the
login that made it, and one idle for ``consumer.instance.timeout.ms`` is closed."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicPartition
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.registry.codec import RegistryCodec
from strom.rest.context import ProxyContext, parse_json
from strom.rest.errors import RestError, from_kafka
from strom.rest.gateway import Login, blocking
from strom.rest.v2 import v2_json
from strom.rest.v2_formats import FORMATS, decode, format_of

__all__ = ["ConsumerInstances", "consumer_routes"]

T = TypeVar("T")
INSTANCE_NOT_FOUND: Final = RestError(404, 40403, "Consumer instance not found.")
DEFAULT_REQUEST_TIMEOUT_MS: Final = 1000
DEFAULT_MAX_BYTES: Final = 64 << 20
MAX_RECORDS_PER_READ: Final = 10_000
UNSUBSCRIBE_WAIT_S: Final = 5.0
UNSUBSCRIBE_POLL_S: Final = 0.05
FORMAT_MISMATCH: Final = (
    "The requested embedded data format does not match the deserializer for this consumer instance"
)


@dataclass
class Instance:
    group: str
    name: str
    fmt: str
    login: Login
    consumer: Consumer
    request_timeout_ms: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    used: float = field(default_factory=time.monotonic)
    subscribed: tuple[str, ...] = ()

    def run(self, call: Callable[[], T]) -> T:
        with self.lock:
            self.used = time.monotonic()
            try:
                return call()
            except KafkaException as error:
                raise from_kafka(error) from error


class ConsumerInstances:
    """The instances of one proxy, closed when idle too long or at ``close``."""

    def __init__(self, client_config: Callable[[Login], dict[str, Any]], idle_ms: int) -> None:
        self._client_config = client_config
        self._idle_s = idle_ms / 1000
        self._instances: dict[tuple[str, str], Instance] = {}
        self._lock = threading.Lock()

    def create(self, group: str, login: Login, body: Mapping[str, Any]) -> Instance:
        fmt = str(body.get("format", "binary")).lower()
        if fmt not in FORMATS:
            raise RestError(422, 42204, f"Invalid consumer configuration: format {fmt!r}")
        name = str(body.get("name") or body.get("id") or f"rest-consumer-{uuid.uuid4()}")
        config = {
            **self._client_config(login),
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": str(body.get("auto.commit.enable", "true")).lower() == "true",
            "auto.offset.reset": str(body.get("auto.offset.reset", "latest")),
        }
        if body.get("fetch.min.bytes") is not None:
            config["fetch.min.bytes"] = int(body["fetch.min.bytes"])
        timeout = int(body.get("consumer.request.timeout.ms") or DEFAULT_REQUEST_TIMEOUT_MS)
        self.expire()
        with self._lock:
            if (group, name) in self._instances:
                raise RestError(409, 40902, f"Consumer {name} already exists in group {group}.")
            try:
                consumer = Consumer(config)
            except (KafkaException, ValueError, TypeError) as error:
                raise RestError(422, 42204, f"Invalid consumer configuration: {error}") from None
            instance = Instance(group, name, fmt, login, consumer, timeout)
            self._instances[(group, name)] = instance
        return instance

    def get(self, group: str, name: str, login: Login) -> Instance:
        self.expire()
        with self._lock:
            instance = self._instances.get((group, name))
        if instance is None or instance.login != login:
            raise INSTANCE_NOT_FOUND
        return instance

    def remove(self, instance: Instance) -> None:
        with self._lock:
            self._instances.pop((instance.group, instance.name), None)
        instance.run(instance.consumer.close)

    def expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [i for i in self._instances.values() if now - i.used > self._idle_s]
            for instance in idle:
                del self._instances[(instance.group, instance.name)]
        for instance in idle:
            instance.run(instance.consumer.close)

    def close(self) -> None:
        with self._lock:
            instances, self._instances = list(self._instances.values()), {}
        for instance in instances:
            instance.run(instance.consumer.close)


def _unsubscribe(consumer: Consumer) -> None:
    """Leave the subscription and wait until its partitions are revoked: librdkafka revokes
    them on a later poll, which would undo an ``assign`` made before it."""
    consumer.unsubscribe()
    deadline = time.monotonic() + UNSUBSCRIBE_WAIT_S
    while consumer.assignment() and time.monotonic() < deadline:
        consumer.consume(1, UNSUBSCRIBE_POLL_S)


def _partitions(body: Any, *, offsets: bool = False) -> list[TopicPartition]:
    key = "offsets" if offsets else "partitions"
    items = body.get(key) if isinstance(body, Mapping) else None
    if not isinstance(items, list):
        raise RestError(422, 42206, f"Payload error. {key}: an array is required.")
    try:
        return [
            TopicPartition(i["topic"], int(i["partition"]), int(i["offset"]))
            if offsets
            else TopicPartition(i["topic"], int(i["partition"]))
            for i in items
        ]
    except (KeyError, TypeError, ValueError):
        raise RestError(
            422, 42206, f"Payload error. {key}: each needs topic and partition"
        ) from None


def _offsets(found: list[TopicPartition]) -> dict[str, object]:
    return {"offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset,
                         "metadata": tp.metadata or ""} for tp in found]}  # fmt: skip


def consumer_routes(
    context: ProxyContext, instances: ConsumerInstances, registry: RegistryCodec | None
) -> list[Route]:
    def _instance(request: Request) -> Instance:
        params = request.path_params
        return instances.get(params["group"], params["instance"], context.login(request))

    async def create(request: Request) -> Response:
        group = request.path_params["group"]
        body = await context.json(request)
        if not isinstance(body, Mapping):
            raise RestError(422, 42206, "Payload error. Expected an object.")
        instance = await blocking(instances.create, group, context.login(request), body)
        base = str(request.base_url).rstrip("/")
        uri = f"{base}/consumers/{group}/instances/{instance.name}"
        return v2_json({"instance_id": instance.name, "base_uri": uri})

    async def delete(request: Request) -> Response:
        await blocking(instances.remove, _instance(request))
        return Response(status_code=204)

    async def subscribe(request: Request) -> Response:
        instance = _instance(request)
        body = await context.json(request)
        topics = body.get("topics") if isinstance(body, Mapping) else None
        pattern = body.get("topic_pattern") if isinstance(body, Mapping) else None
        if not topics and not pattern:
            raise RestError(422, 42206, "Payload error. topics or topic_pattern is required.")
        wanted = tuple(topics) if topics else (f"^{pattern}",)
        await blocking(instance.run, lambda: instance.consumer.subscribe(list(wanted)))
        instance.subscribed = wanted
        return Response(status_code=204)

    async def subscription(request: Request) -> Response:
        return v2_json({"topics": list(_instance(request).subscribed)})

    async def unsubscribe(request: Request) -> Response:
        instance = _instance(request)
        await blocking(instance.run, lambda: _unsubscribe(instance.consumer))
        instance.subscribed = ()
        return Response(status_code=204)

    async def assign(request: Request) -> Response:
        instance = _instance(request)
        partitions = _partitions(await context.json(request))
        await blocking(instance.run, lambda: instance.consumer.assign(partitions))
        return Response(status_code=204)

    async def assignments(request: Request) -> Response:
        instance = _instance(request)
        found = await blocking(instance.run, instance.consumer.assignment)
        return v2_json({"partitions": [{"topic": tp.topic, "partition": tp.partition}
                                       for tp in found]})  # fmt: skip

    async def seek(request: Request) -> Response:
        instance = _instance(request)
        path = request.url.path
        body = await context.json(request)
        if path.endswith(("/beginning", "/end")):
            where = OFFSET_BEGINNING if path.endswith("/beginning") else OFFSET_END
            targets = [TopicPartition(tp.topic, tp.partition, where) for tp in _partitions(body)]
        else:
            targets = _partitions(body, offsets=True)

        def go() -> None:
            for target in targets:
                instance.consumer.seek(target)

        await blocking(instance.run, go)
        return Response(status_code=204)

    async def records(request: Request) -> Response:
        instance = _instance(request)
        wanted = format_of(request.headers.get("accept"), default=instance.fmt)
        if wanted != instance.fmt:
            raise RestError(406, 40601, FORMAT_MISMATCH)
        timeout_ms = int(request.query_params.get("timeout") or instance.request_timeout_ms)
        max_bytes = int(request.query_params.get("max_bytes") or DEFAULT_MAX_BYTES)

        def read() -> list[dict[str, object]]:
            out: list[dict[str, object]] = []
            size = 0
            deadline = time.monotonic() + timeout_ms / 1000
            while not out and time.monotonic() < deadline:
                left = max(0.0, deadline - time.monotonic())
                for message in instance.consumer.consume(MAX_RECORDS_PER_READ, left):
                    if message.error() is not None:
                        raise KafkaException(message.error())
                    key, value = message.key(), message.value()
                    size += len(key or b"") + len(value or b"")
                    out.append({
                        "topic": message.topic(), "partition": message.partition(),
                        "offset": message.offset(),
                        "key": decode(registry, instance.fmt, key),
                        "value": decode(registry, instance.fmt, value),
                    })  # fmt: skip
                    if size >= max_bytes:
                        break
            return out

        found = await blocking(instance.run, read)
        return v2_json(found)

    async def commit(request: Request) -> Response:
        instance = _instance(request)
        raw = await context.body(request)
        given = _partitions(parse_json(raw), offsets=True) if raw.strip() else None

        def go() -> list[TopicPartition]:
            if given:
                return instance.consumer.commit(offsets=given, asynchronous=False) or []
            return instance.consumer.commit(asynchronous=False) or []

        done = await blocking(instance.run, go)
        return v2_json(_offsets(done))

    async def committed(request: Request) -> Response:
        instance = _instance(request)
        partitions = _partitions(await context.json(request))
        found = await blocking(instance.run, lambda: instance.consumer.committed(partitions, 10))
        return v2_json(_offsets(found))

    i = "/consumers/{group}/instances/{instance}"
    return [
        Route("/consumers/{group}", create, methods=["POST"]),
        Route(i, delete, methods=["DELETE"]),
        Route(f"{i}/subscription", subscribe, methods=["POST"]),
        Route(f"{i}/subscription", subscription, methods=["GET"]),
        Route(f"{i}/subscription", unsubscribe, methods=["DELETE"]),
        Route(f"{i}/assignments", assign, methods=["POST"]),
        Route(f"{i}/assignments", assignments, methods=["GET"]),
        Route(f"{i}/positions", seek, methods=["POST"]),
        Route(f"{i}/positions/beginning", seek, methods=["POST"]),
        Route(f"{i}/positions/end", seek, methods=["POST"]),
        Route(f"{i}/records", records, methods=["GET"]),
        Route(f"{i}/offsets", commit, methods=["POST"]),
        Route(f"{i}/offsets", committed, methods=["GET"]),
    ]
