"""Orders enriched with their user: a stream joined with a static table (stream-static join).

Input records are JSON orders, ``{"order": 1001, "user": 2, "amount": 12.5}``; the users come
from a CSV file (``--users``, columns user,name,country). Each order leaves with its user's
name and country, or without them when the user is unknown (a left join): key the order id,
value JSON. Prints them, or writes them to the ``--output`` topic.

    .venv/bin/python examples/enrich_join.py --seed --once
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import functions as F
from strom_example import ensure_topics, parser, produce, run, session, source_options

from strom.spark import decode_value, encode_value

ORDER_SCHEMA = "order LONG, user INT, amount DOUBLE"
USERS_SCHEMA = "user INT, name STRING, country STRING"
USERS_CSV = Path(__file__).resolve().parent / "data" / "users.csv"

DEMO_ORDERS = (
    (1001, 2, 12.5),
    (1002, 1, 3.25),
    (1003, 3, 40.0),
    (1004, 2, 7.75),
    (1005, 9, 1.0),  # no such user: kept, without name and country
)
"""Seeded orders: order id, user id, amount."""


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__.splitlines()[0], input_topic="orders", output_topic=None)
    cli.add_argument(
        "--users", default=str(USERS_CSV), help="users CSV file (default: examples/data/users.csv)"
    )
    args = cli.parse_args(argv)
    ensure_topics(args.bootstrap, [args.input] + ([args.output] if args.output else []))
    if args.seed:
        demo = (
            json.dumps({"order": order, "user": user, "amount": amount}).encode()
            for order, user, amount in DEMO_ORDERS
        )
        produce(args.bootstrap, args.input, ((None, order) for order in demo))

    spark = session("enrich-join", args.master, args.conf)
    users = spark.read.csv(args.users, header=True, schema=USERS_SCHEMA)
    raw = spark.readStream.format("strom").options(**source_options(args)).load()
    orders = raw.select(decode_value(raw.value, "json", ORDER_SCHEMA).alias("o")).select("o.*")
    enriched = orders.join(users, "user", "left").select(
        "order", "user", "name", "country", "amount"
    )
    if args.output:
        record = encode_value(F.struct(*enriched.columns), "json")
        writer = (
            enriched.select(F.col("order").cast("string").alias("key"), record.alias("value"))
            .writeStream.format("strom")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.output)
        )
    else:
        writer = enriched.writeStream.format("console")
    run(writer, args)


if __name__ == "__main__":
    main()
