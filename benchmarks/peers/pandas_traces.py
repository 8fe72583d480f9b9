"""The peer of `rankgate traces analyze`: the trace signals written the way a user would with pandas.

`python pandas_traces.py TRACES.parquet` reads rankgate's trace records (Parquet), explodes the
retrieved items, and computes per day: latency p50/p95/p99 per stage, errors per 1,000 requests
(499 excluded), fallback and no-result rates, the share of requests with a deprecated item in the
packed context, negative feedback per cited source with Wilson intervals, redaction efficacy, and
instability (the modal top-10 reranked list per query and day against the previous day's, RBO p=0.9
and Jaccard). Prints one JSON line of check values.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd


def rbo(a, b, p=0.9):
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    S, L = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(S), len(L)
    ss, sl, x, ov = set(), set(), [0] * (l + 1), 0
    for d in range(1, l + 1):
        if d <= s:
            ov += S[d - 1] in sl
            ss.add(S[d - 1])
        ov += L[d - 1] in ss
        sl.add(L[d - 1])
        x[d] = ov
    tot = sum(x[d] / d * p**d for d in range(1, l + 1)) + sum(x[s] * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * tot + ((x[l] - x[s]) / l + x[s] / s) * p**l


def wilson(k, n, z=1.959963984540054):
    c = (k + z * z / 2) / (n + z * z)
    h = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return max(0.0, c - h), min(1.0, c + h)


def main(path: str) -> None:
    df = pd.read_parquet(path)
    df["day"] = pd.to_datetime(df["timestamp"], utc=True).dt.floor("D")
    t = pd.json_normalize(df["timings_ms"].tolist()) if df["timings_ms"].dtype == object else None
    for stage in ("parse", "retrieval", "rerank", "synthesis", "total"):
        df[f"{stage}_ms"] = t[stage].to_numpy()
    out = {}
    lat = df.groupby("day")[[f"{s}_ms" for s in ("parse", "retrieval", "rerank", "synthesis", "total")]].quantile(
        [0.5, 0.95, 0.99])
    out["total_p95_all"] = float(np.percentile(df["total_ms"], 95))
    err = (df["http_status"] >= 400) & (df["http_status"] != 499) & ~df["client_abort"].fillna(False)
    daily = pd.DataFrame({"err": err, "fallback": df["fallback"], "day": df["day"]}).groupby("day").mean()
    out["error_rate_per_1k_all"] = float(1000 * err.mean())
    items = df[["request_id", "day", "retrieved"]].explode("retrieved").dropna(subset=["retrieved"])
    items = pd.concat([items[["request_id", "day"]].reset_index(drop=True),
                       pd.json_normalize(items["retrieved"].tolist())], axis=1)
    packed = items[items["stage"] == "packed"]
    dep = packed.assign(bad=packed["status"].isin(["deprecated", "superseded", "retired"])).groupby(
        ["day", "request_id"])["bad"].any().groupby("day").mean()
    noresult = 1 - df["request_id"].isin(items["request_id"]).groupby(df["day"]).mean()
    cits = df[["request_id", "citations"]].explode("citations").dropna(subset=["citations"])
    cits = pd.concat([cits[["request_id"]].reset_index(drop=True), pd.json_normalize(cits["citations"].tolist())],
                     axis=1)
    src = cits.merge(packed[["request_id", "id", "source"]], on=["request_id", "id"])[["request_id", "source"]]
    src = src.drop_duplicates()
    fb = df[["request_id", "day", "feedback"]].explode("feedback").dropna(subset=["feedback"])
    fb["negative"] = [f["value"] < 0.5 for f in fb["feedback"]]
    by_src = src.merge(fb[["request_id", "day", "negative"]], on="request_id").groupby(["day", "source"])["negative"].agg(
        ["sum", "count"])
    by_src["lo"], by_src["hi"] = zip(*[wilson(k, n) for k, n in zip(by_src["sum"], by_src["count"])])
    sens = df["privacy"].map(lambda p: p["sensitive_tokens"])
    leak = df["privacy"].map(lambda p: p["leaked_tokens"])
    red = 1 - leak.groupby(df["day"]).sum() / sens.groupby(df["day"]).sum()
    rr = items[(items["stage"] == "reranked") & (items["rank"] <= 10)].sort_values(["request_id", "rank"])
    lists = rr.groupby("request_id")["id"].agg(tuple)
    q = df.set_index("request_id")[["query", "day", "index_version"]].join(lists.rename("lst"), how="inner")
    modal = q.groupby(["query", "day"])["lst"].agg(lambda s: s.value_counts().idxmax())
    prev = modal.reset_index()
    prev["day"] = prev["day"] + pd.Timedelta(days=1)
    pairs = q.reset_index().merge(prev.rename(columns={"lst": "ref"}), on=["query", "day"])
    pairs["rbo"] = [rbo(list(a), list(b)) for a, b in zip(pairs["lst"], pairs["ref"])]
    pairs["jaccard"] = [len(set(a) & set(b)) / len(set(a) | set(b)) for a, b in zip(pairs["lst"], pairs["ref"])]
    inst = pairs.groupby("day")[["rbo", "jaccard"]].mean()
    out["days"] = int(df["day"].nunique())
    out["checks"] = [len(lat), len(daily), len(dep), len(noresult), len(by_src), len(red), len(inst)]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
