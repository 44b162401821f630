"""The REST proxy beside a direct confluent-kafka client, in the same run.

Run: ``.venv/bin/python -m bench.rest_proxy [--records N] [--size BYTES] [--rounds R]``.

How it measures (one ``strom server`` child process, one ``strom rest`` child process):

- **v3 streaming produce**: one chunked ``POST .../records`` carrying ``--records`` BINARY
  records of ``--size`` bytes, the answers read as they come; records/s from the first byte
  sent to the last answer. Beside it, a confluent-kafka producer (acks=all, linger.ms 5, as the
  proxy's own) sending the same records until ``flush``.
- **v2 consumer fetch**: a binary consumer instance assigned the topic's partition reading
  every record with ``GET .../records``, from its assignment to its last record; beside it, a
  confluent-kafka consumer assigned the same partition reading them.
- **1,000 connections**: 1,000 concurrent HTTP connections (plain asyncio sockets), each a
  ``GET`` of the topic; how many got a 200 and the p99 of their answers.
- **CPU per record**: the proxy process's CPU time (all threads) over the stream, per
  record: what a loaded machine changes least.
- **memory**: the proxy's resident set before and after a stream of ``--records`` x 5 records,
  to show that a stream is served in bounded memory.

Ratios are medians over ``--rounds``; the issue's goal is >= 0.3x of the direct client.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import httpx
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from strom.testing import Broker, unique_topic_name

GOAL = 0.3


def start_proxy(bootstrap: str, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "strom", "rest", "--bootstrap-server", bootstrap,
         "--listener", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v3/clusters", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("strom rest did not start")


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, all its threads (librdkafka's too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def stream_produce(url: str, topic: str, count: int, size: int) -> float:
    """Records/s of one chunked stream of ``count`` records, its answers read while the
    records are still being sent (a streaming client must read as it writes: the proxy holds
    at most a bounded number of unanswered records)."""
    record = json.dumps(
        {"value": {"type": "BINARY", "data": base64.b64encode(b"x" * size).decode()}}
    ).encode()
    batch = record * 100
    parsed = urllib.parse.urlsplit(url)
    connection = socket.create_connection((parsed.hostname, parsed.port))
    head = (
        f"POST {parsed.path}/topics/{topic}/records HTTP/1.1\r\nHost: {parsed.netloc}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    def send() -> None:
        connection.sendall(head.encode())
        for _ in range(count // 100):
            connection.sendall(b"%x\r\n%s\r\n" % (len(batch), batch))
        connection.sendall(b"0\r\n\r\n")

    started = time.perf_counter()
    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    answers = 0
    reader = connection.makefile("rb")
    while reader.readline() not in (b"\r\n", b""):  # the status line and headers
        pass
    pending = b""
    while True:  # the chunked answer: lines of JSON, one per record
        length = int(reader.readline().strip(), 16)
        if length == 0:
            break
        pending += reader.read(length)
        reader.readline()
        *lines, pending = pending.split(b"\n")
        for line in lines:
            assert json.loads(line)["error_code"] == 200, line
        answers += len(lines)
    elapsed = time.perf_counter() - started
    writer.join()
    connection.close()
    assert answers == count // 100 * 100, answers
    return answers / elapsed


def direct_produce(bootstrap: str, topic: str, count: int, size: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * size
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(60)
    return count / (time.perf_counter() - started)


def v2_fetch(base: str, topic: str, count: int) -> float:
    group = unique_topic_name("bench-rest")
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    with httpx.Client(base_url=base, timeout=60, headers=v2) as client:
        created = client.post(f"/consumers/{group}", json={
            "name": "c", "format": "binary", "auto.offset.reset": "earliest"}).json()  # fmt: skip
        instance = f"/consumers/{group}/instances/{created['instance_id']}"
        accept = {"Accept": "application/vnd.kafka.binary.v2+json"}
        started = time.perf_counter()
        client.post(
            f"{instance}/assignments", json={"partitions": [{"topic": topic, "partition": 0}]}
        )
        got = 0
        while got < count:
            got += len(client.get(f"{instance}/records", params={"timeout": 1000},
                                  headers=accept).json())  # fmt: skip
        elapsed = time.perf_counter() - started
        client.delete(instance)
    return got / elapsed


def direct_fetch(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic_name("d"),
                         "auto.offset.reset": "earliest"})  # fmt: skip
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    while got < count:
        got += len(consumer.consume(10_000, 1.0))
    elapsed = time.perf_counter() - started
    consumer.close()
    return got / elapsed


async def connections(url: str, topic: str, count: int) -> tuple[int, float]:
    """``count`` connections at once, each a ``GET`` of the topic: how many got a 200, and the
    p99 of their times. Plain asyncio sockets: httpx's pool, in this process, spends seconds
    of Python on 1,000 connections and would be what is measured."""
    parsed = urllib.parse.urlsplit(url)
    request = (
        f"GET {parsed.path}/topics/{topic} HTTP/1.1\r\nHost: {parsed.netloc}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()

    async def one() -> tuple[bool, float]:
        started = time.perf_counter()
        reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
        writer.write(request)
        answer = await reader.read()  # to the end: the proxy closes after its answer
        writer.close()
        return answer.startswith(b"HTTP/1.1 200 "), time.perf_counter() - started

    results = await asyncio.gather(*(one() for _ in range(count)))
    ok = sum(1 for good, _ in results if good)
    p99 = statistics.quantiles([t for _, t in results], n=100)[98]
    return ok, p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with Broker(process=True) as broker:
        port = 18000 + os.getpid() % 1000
        proxy = start_proxy(broker.bootstrap_servers, port)
        base = f"http://127.0.0.1:{port}"
        cluster = httpx.get(f"{base}/v3/clusters").json()["data"][0]["cluster_id"]
        url = f"{base}/v3/clusters/{cluster}"
        cpu_per_record: list[float] = []
        rows: dict[str, list[tuple[float, float]]] = {
            "v3 streaming produce": [],
            "v2 consumer fetch": [],
        }
        try:
            for round_ in range(args.rounds):
                topic = broker.create_topic(unique_topic_name("bench-rest"))
                cpu = cpu_seconds(proxy.pid)
                rest = stream_produce(url, topic, args.records, args.size)
                cpu_per_record.append((cpu_seconds(proxy.pid) - cpu) / args.records * 1e6)
                direct = direct_produce(broker.bootstrap_servers, topic, args.records, args.size)
                rows["v3 streaming produce"].append((rest, direct))
                total = 2 * (args.records // 100 * 100)
                rows["v2 consumer fetch"].append(
                    (
                        v2_fetch(base, topic, total),
                        direct_fetch(broker.bootstrap_servers, topic, total),
                    )
                )
                print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
            print(f"{args.records} records of {args.size} B, medians of {args.rounds} rounds, "
                  f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
            print(f"{'path':<22} {'proxy rec/s':>12} {'direct rec/s':>13} {'ratio':>6}  goal")
            for name, pairs in rows.items():
                rest = statistics.median(p[0] for p in pairs)
                direct = statistics.median(p[1] for p in pairs)
                ratio = statistics.median(p[0] / p[1] for p in pairs)
                verdict = "met" if ratio >= GOAL else "not met"
                figures = f"{rest:>12,.0f} {direct:>13,.0f} {ratio:>5.2f}x"
                print(f"{name:<22} {figures}  >= {GOAL}x {verdict}")
            print(f"proxy CPU per streamed record: {statistics.median(cpu_per_record):.1f} us")
            topic = broker.create_topic(unique_topic_name("bench-rest"))
            ok, p99 = asyncio.run(connections(url, topic, 1000))
            print(f"1,000 concurrent connections: {ok} answered 200, p99 {p99 * 1000:.0f} ms")
            before = rss_kib(proxy.pid)
            stream_produce(url, topic, args.records * 5, args.size)
            after = rss_kib(proxy.pid)
            print(f"proxy RSS around a stream of {args.records * 5:,} records: "
                  f"{before / 1024:.0f} MiB -> {after / 1024:.0f} MiB")  # fmt: skip
        finally:
            proxy.send_signal(signal.SIGINT)
            proxy.wait(30)


if __name__ == "__main__":
    main()
