"""Page views per page and minute of event time, with a watermark, written back to a topic.

Input records are JSON page views, ``{"page": "home", "user": "u1", "time":
"2026-01-01T10:00:05Z"}``, in any order within the watermark. A window's count is written once,
final, when the watermark (the latest event time seen, less ``--watermark``) passes its end:
key the page, value JSON ``{"window_start": ..., "window_end": ..., "page": ..., "views": n}``.
Views older than the watermark when they arrive are dropped.

    .venv/bin/python examples/windowed_counts.py --seed --once
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyspark.sql import functions as F
from strom_example import ensure_topics, parser, produce, run, session, source_options

from strom.spark import decode_value, encode_value

VIEW_SCHEMA = "page STRING, user STRING, time TIMESTAMP"

DEMO_VIEWS = (
    ("10:00:05", "home", "u1"),
    ("10:00:40", "cart", "u1"),
    ("10:00:12", "home", "u2"),
    ("10:01:03", "home", "u3"),
    ("10:00:59", "home", "u3"),  # a minute-0 view after minute-1 ones: still counted
    ("10:01:30", "cart", "u2"),
    ("10:01:31", "cart", "u3"),
    ("10:01:45", "checkout", "u1"),
    ("10:02:10", "home", "u4"),
    ("10:02:50", "checkout", "u2"),
    ("10:05:00", "home", "u5"),  # moves the watermark past the windows before 10:04
)
"""Seeded views on 2026-01-01 (UTC): time, page, user."""


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__.splitlines()[0], input_topic="page-views", output_topic="views-per-minute")
    cli.add_argument("--window", default="1 minute", help="window length (default: %(default)s)")
    cli.add_argument(
        "--watermark",
        default="1 minute",
        help="how late a view may come, in event time (default: %(default)s)",
    )
    args = cli.parse_args(argv)
    ensure_topics(args.bootstrap, [args.input, args.output])
    if args.seed:
        demo = (
            json.dumps({"page": page, "user": user, "time": f"2026-01-01T{hms}Z"}).encode()
            for hms, page, user in DEMO_VIEWS
        )
        produce(args.bootstrap, args.input, ((None, view) for view in demo))

    spark = session("windowed-counts", args.master, args.conf)
    raw = spark.readStream.format("strom").options(**source_options(args)).load()
    views = raw.select(decode_value(raw.value, "json", VIEW_SCHEMA).alias("v")).select("v.*")
    counts = (
        views.withWatermark("time", args.watermark)
        .groupBy(F.window("time", args.window), "page")
        .agg(F.count("*").alias("views"))
    )
    result = F.struct(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "page",
        "views",
    )
    writer = (
        counts.select(F.col("page").alias("key"), encode_value(result, "json").alias("value"))
        .writeStream.format("strom")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.output)
        .outputMode("append")
    )
    run(writer, args)


if __name__ == "__main__":
    main()
