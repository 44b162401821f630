"""v3's produce: ``POST .../topics/{topic}/records`` and ``records:batch``. One JSON object is
one record and one answer (an error as the answer's HTTP status); concatenated objects, or a
chunked body, are a stream: records are sent as they arrive, in order, and each gets its own
answer with an ``error_code`` in a 200 stream, as Confluent's streaming mode. At most
``IN_FLIGHT`` records of a stream are unanswered at once, so a stream of any length is served
in bounded memory."""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Message, TopicCollection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from strom.registry.codec import RegistryCodec
from strom.rest import schemas
from strom.rest.answers import StreamAnswers
from strom.rest.context import TOO_LARGE, ProxyContext
from strom.rest.errors import RestError, from_kafka
from strom.rest.gateway import blocking, result
from strom.rest.records import ProduceRecord, delivered, iso_millis, parse, plain_message
from strom.web.http import json_response

__all__ = ["record_routes"]

IN_FLIGHT: Final = 5000
BATCH: Final = 500
"""Records of a stream taken at once: their slots reserved together, the plain ones handed to
librdkafka in one call (fewer than ``IN_FLIGHT``, so earlier records can make room)."""
MAX_BATCH: Final = 10
"""Entries of one ``records:batch`` request, as Confluent's proxy."""
_SCAN: Final[Callable[[str, int], tuple[object, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The decoder's C scanner: one JSON value at an index (what ``raw_decode`` wraps, without its
Python frame: a stream calls it per record)."""
_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _error(error: RestError) -> dict[str, object]:
    return {"error_code": error.error_code, "message": error.message}


def _after_space(text: str, position: int) -> int:
    space = _SPACE.match(text, position)
    return space.end() if space else position


def _whole_objects(buffer: str, limit: int) -> tuple[list[object], int]:
    """The whole JSON objects at the start of ``buffer`` (one over ``limit`` characters is
    its 413 error instead), and where the rest begins."""
    found: list[object] = []
    position = 0
    end = len(buffer)
    while position < end:
        if buffer[position] != "{":
            position = _after_space(buffer, position)
            if position == end:
                break
        try:
            value, after = _SCAN(buffer, position)
        except (StopIteration, ValueError):
            break  # an object not whole yet
        found.append(TOO_LARGE if after - position > limit else value)
        position = after
    return found, position


async def _objects(
    request: Request, limit: int, body: bytes | None = None
) -> AsyncIterator[list[object]]:
    """The concatenated JSON objects of the body (``body`` when already read), those of each
    chunk as soon as it has arrived; a ``RestError`` in place of one over ``limit``."""
    text = codecs.getincrementaldecoder("utf-8")()
    buffer = ""
    chunks = request.stream() if body is None else _once(body)
    async for chunk in chunks:
        buffer += text.decode(chunk)
        found, rest = _whole_objects(buffer, limit)
        if found:
            yield found
        buffer = buffer[rest:]
        if len(buffer) > limit:
            raise TOO_LARGE
    if buffer.strip():
        raise RestError(400, 400, f"Cannot parse the request body as JSON: {buffer[:80]!r}")


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


class _AnswerStream(Response):
    """A 200 whose body is ``chunks``, sent while the request body is still being read
    (Starlette's StreamingResponse would take the body's messages to watch for a
    disconnect)."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        super().__init__(media_type="application/json")
        del self.headers["content-length"]
        self._chunks = chunks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async for chunk in self._chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@dataclass(frozen=True)
class _Prepared:
    """A record ready to send: the request's, with its key and value encoded."""

    record: ProduceRecord
    key: schemas.Encoded
    value: schemas.Encoded

    def fields(self) -> dict[str, Any]:
        record = self.record
        return {
            "partition": record.partition,
            "key": self.key.data,
            "value": self.value.data,
            "headers": [(name, value) for name, value in record.headers],
            "timestamp_ms": record.timestamp_ms,
        }

    def answer(
        self, cluster_id: str, topic: str, error: KafkaError | None, message: Message
    ) -> dict[str, object]:
        if error is not None:
            return _error(from_kafka(error))
        _, timestamp = message.timestamp()
        return delivered(
            cluster_id=cluster_id,
            topic=topic,
            partition=message.partition() or 0,
            offset=message.offset() or 0,
            timestamp_ms=timestamp,
            key=self.key.report,
            value=self.value.report,
        )


@dataclass(frozen=True)
class _Report:
    """librdkafka's delivery report of a streamed record."""

    answers: StreamAnswers
    slot: int
    prepared: _Prepared
    cluster_id: str
    topic: str

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        self.answers.fill(
            self.slot, self.prepared.answer(self.cluster_id, self.topic, error, message)
        )


class _Delivered:
    """The answers of a stream's plain records (``plain_message``), written from their
    delivery reports without building a dict for each."""

    def __init__(self, answers: StreamAnswers, cluster_id: str, topic: str) -> None:
        self._answers = answers
        head = {"error_code": 200, "cluster_id": cluster_id, "topic_name": topic}
        self._head = json.dumps(head, separators=(",", ":"))[:-1]

    def __call__(self, slot: int, tail: str, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._answers.fill(slot, _error(from_kafka(error)))
            return
        _, timestamp = message.timestamp()
        when = "null" if timestamp is None else f'"{iso_millis(timestamp)}"'
        self._answers.fill_line(
            slot,
            f'{self._head},"partition_id":{message.partition()},"offset":{message.offset()},'
            f'"timestamp":{when},{tail}'.encode(),
        )


def record_routes(context: ProxyContext, registry: RegistryCodec | None) -> list[Route]:
    async def _partitions(request: Request, topic: str) -> int:
        """The topic's partition count (Metadata would create a missing topic)."""
        futures = context.admin(request).describe_topics(TopicCollection([topic]))
        try:
            return len((await result(futures[topic])).partitions)
        except KafkaException as error:
            raise from_kafka(error) from error

    async def prepare(raw: object, topic: str, partitions: int) -> _Prepared:
        """A request object checked and its key and value encoded (a ``RestError`` if not)."""
        if isinstance(raw, RestError):  # a record over max.request.size
            raise raw
        record = parse(raw)
        if record.partition is not None and record.partition >= partitions:
            raise RestError(404, 40402, "Partition not found.")
        return _Prepared(
            record,
            await _encode(record, topic, is_key=True),
            await _encode(record, topic, is_key=False),
        )

    async def _encode(record: ProduceRecord, topic: str, *, is_key: bool) -> schemas.Encoded:
        spec = record.key if is_key else record.value
        if spec is None or not spec.needs_schema or registry is None:
            return schemas.encode(registry, spec, topic, is_key=is_key)
        return await blocking(schemas.encode, registry, spec, topic, is_key=is_key)

    async def produce_one(
        request: Request, cluster_id: str, topic: str, partitions: int, raw: object
    ) -> dict[str, object]:
        prepared = await prepare(raw, topic, partitions)
        try:
            message = await context.producer(request).send(topic, **prepared.fields())
        except KafkaException as error:
            raise from_kafka(error) from error
        return prepared.answer(cluster_id, topic, None, message)

    async def answer(
        request: Request, cluster_id: str, topic: str, partitions: int, raw: object
    ) -> dict[str, object]:
        try:
            return await produce_one(request, cluster_id, topic, partitions, raw)
        except RestError as error:
            return _error(error)

    async def produce(request: Request) -> Response:
        links = await context.links(request)
        topic = request.path_params["topic_name"]
        partitions = await _partitions(request, topic)
        chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
        limit = context.settings.max_body_bytes
        body = None
        if not chunked:
            body = await context.body(request)
            if not body.strip():
                raise RestError(422, 422, "Payload error. Request body is empty. Data is required.")
            objects = [value async for found in _objects(request, limit, body) for value in found]
            if len(objects) == 1:
                return json_response(
                    await produce_one(request, links.cluster_id, topic, partitions, objects[0])
                )
        answers = StreamAnswers(IN_FLIGHT)
        producer = context.producer(request)

        plain_answer = _Delivered(answers, links.cluster_id, topic)
        batch: list[dict[str, Any]] = []

        async def flush() -> None:
            nonlocal batch
            if batch:
                await producer.submit_batch(topic, batch)
                batch = []

        async def read() -> None:
            try:
                async for found in _objects(request, limit, body):
                    for start in range(0, len(found), BATCH):
                        group = found[start : start + BATCH]
                        first = await answers.reserve(len(group))
                        for slot, raw in enumerate(group, first):
                            plain = plain_message(raw, partitions, registry=registry is not None)
                            if plain is None:
                                await flush()  # a record of the general path keeps its place
                                await send(raw, slot)
                                continue
                            message, tail = plain
                            message["callback"] = functools.partial(plain_answer, slot, tail)
                            batch.append(message)
                        await flush()
            except RestError as error:  # the body stopped being JSON
                await flush()
                answers.fill(await answers.reserve(), _error(error))
            finally:
                answers.finish()

        async def send(raw: object, slot: int) -> None:
            try:
                prepared = await prepare(raw, topic, partitions)
            except RestError as error:
                answers.fill(slot, _error(error))
                return
            await producer.submit(
                topic, **prepared.fields(),
                on_delivery=_Report(answers, slot, prepared, links.cluster_id, topic),
            )  # fmt: skip

        async def chunks() -> AsyncIterator[bytes]:
            reader = asyncio.ensure_future(read())
            try:
                while (chunk := await answers.next_chunk()) is not None:
                    yield chunk
            finally:
                reader.cancel()

        return _AnswerStream(chunks())

    async def produce_batch(request: Request) -> Response:
        links = await context.links(request)
        topic = request.path_params["topic_name"]
        body = await context.json(request)
        entries = body.get("entries") if isinstance(body, Mapping) else None
        if not isinstance(entries, list) or not entries:
            raise RestError(400, 42208, "Empty batch." if entries == [] else "entries: required")
        if len(entries) > MAX_BATCH:
            raise RestError(400, 42208, f"Too many entries in batch (at most {MAX_BATCH}).")
        ids = [e.get("id") if isinstance(e, Mapping) else None for e in entries]
        if any(not isinstance(i, str) or not 1 <= len(i) <= 80 for i in ids):
            raise RestError(400, 42208, "Batch entry identifier is not a valid string.")
        if len(set(ids)) != len(ids):
            raise RestError(400, 42208, "Batch entry identifiers are not distinct.")
        partitions = await _partitions(request, topic)
        results = await asyncio.gather(
            *(answer(request, links.cluster_id, topic, partitions, e) for e in entries)
        )
        successes: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        for entry_id, outcome in zip(ids, results, strict=True):
            (successes if outcome["error_code"] == 200 else failures).append(
                {"id": entry_id, **outcome}
            )
        return json_response({"successes": successes, "failures": failures}, 207)

    t = "/v3/clusters/{cluster_id}/topics/{topic_name}"
    return [
        Route(f"{t}/records", produce, methods=["POST"]),
        Route(f"{t}/records:batch", produce_batch, methods=["POST"]),
    ]
