"""The peer of `rankgate traces analyze --signals headline`: the headline figures with polars.

`python polars_traces.py TRACES.parquet THRESHOLD` reads rankgate's trace records (Parquet) and
prints one JSON line: latency p50/p95/p99 per stage (linear interpolation between order statistics,
as DuckDB's quantile_cont), errors per 1,000 requests (client aborts excluded), the fallback share
and the low-confidence share (top-1 candidate score under THRESHOLD). Ranks are taken as logged.
"""

from __future__ import annotations

import json
import sys

import polars as pl

STAGES = ("parse", "retrieval", "rerank", "synthesis", "total")
ABORTS = ["client_abort", "client_aborted", "client_disconnect", "client_disconnected", "clientdisconnect",
          "clientdisconnected", "cancelled", "canceled", "499"]


def main(path: str, threshold: float) -> None:
    lf = pl.scan_parquet(path)
    http, status = pl.col("http_status"), pl.col("status").replace("", None)
    derived = (http == 499) | pl.col("error_type").str.strip_chars().str.to_lowercase().is_in(ABORTS)
    abort = pl.col("client_abort").fill_null(derived).fill_null(False) | (http == 499).fill_null(False)
    error = ((http >= 400) | (http.is_null() & (status == "error"))).fill_null(False)
    req = lf.select(*[pl.col("timings_ms").struct.field(s) for s in STAGES], pl.col("fallback"),
                    (http.is_not_null() | status.is_not_null()).alias("err_n"), (error & ~abort).alias("err_k"))
    heads = req.select(*[pl.col(s).quantile(p, interpolation="linear").alias(f"{s}.p{round(p * 100)}")
                         for s in STAGES for p in (0.5, 0.95, 0.99)],
                       *[pl.col(s).count().alias(f"{s}.n") for s in STAGES], pl.col("err_k").sum(),
                       pl.col("err_n").sum(), pl.col("fallback").sum().alias("fallback_k"),
                       pl.col("fallback").count().alias("fallback_n"))
    item = pl.col("retrieved").struct
    top1 = (lf.select(pl.int_range(pl.len()).alias("row"), "retrieved").explode("retrieved")
            .filter((item.field("stage") == "candidate") & (item.field("rank") == 1))
            .group_by("row").agg(item.field("score").max().alias("top1")))
    low = top1.select((pl.col("top1") < threshold).sum().alias("lowconf_k"), pl.col("top1").count().alias("scored_n"))
    a, b = pl.collect_all([heads, low])
    row = {**a.row(0, named=True), **b.row(0, named=True)}
    row["error_rate_per_1k"] = 1000.0 * row["err_k"] / row["err_n"]
    row["fallback_rate"] = row["fallback_k"] / row["fallback_n"]
    row["low_confidence_rate"] = row["lowconf_k"] / row["scored_n"]
    print(json.dumps(row))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
