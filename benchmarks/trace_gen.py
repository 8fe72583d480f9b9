"""Seeded synthetic production traces with injected incidents, in every trace format rankgate reads.

API (importable by tests; ``benchmarks/`` is not a package, so put it on ``sys.path`` first)::

    from trace_gen import generate, Spec
    truth = generate(out_dir, Spec(days=7, per_day=2000, seed=0), formats=("jsonl", "parquet"))
    truth["incidents"]      # list of dicts, see below
    truth["files"]          # {format: [paths relative to out_dir]}, pass them to read_traces(..., format=fmt)

CLI::

    python benchmarks/trace_gen.py OUT_DIR --days 7 --per-day 2000 --seed 0 --formats all
    python benchmarks/trace_gen.py OUT_DIR --days 1 --per-day 1000000 --formats parquet --clean   # the benchmark

Written to ``OUT_DIR``:
  ``corpus.jsonl``       the corpus manifest (chunk_id, doc_id, doc_version, status, source, tenant)
  ``truth.json``         the Spec, the incidents, the non-incidents, the clean days, the files
  ``jsonl/traces.jsonl`` rankgate trace JSONL        ``parquet/traces.parquet``  the same records as Parquet
  ``otlp/traces.otlp.jsonl``  OTLP/JSON, one ExportTraceServiceRequest per request (GenAI retrieval span,
                         OpenInference RERANKER span, HTTP server root span, rankgate.* attributes)
  ``phoenix/spans.parquet``   a Phoenix spans dataframe (``context.span_id``, ``attributes.retrieval.documents``…)
  ``langfuse/observations_v2/*.jsonl``, ``langfuse/scores/*.jsonl``   a Langfuse blob-storage export
  ``langsmith/runs.jsonl``, ``langsmith/feedback.jsonl``              LangSmith runs and feedback
Every format holds the same logical requests (same ids, times, items, scores); fields a format
cannot carry are absent from it. jsonl and parquet are built columnar (1M requests x 20 candidates
in well under a minute); the other formats are written request by request, for test sizes.

Traffic (every day, "realistic noise"): 3 tenants (acme 50%, globex 30%, initech 20%), 2 surfaces,
2 data sources, a Zipf pool of queries (so the same query_key recurs across days), 20 candidates,
top 10 reranked, 5 packed (deprecated chunks are filtered out of the packed context), 1-2 citations
(1% cite an older document version), feedback on 10% of requests (15% negative), 0.2% 5xx, 0.3%
client aborts (499), 2% retries, ~2% fallbacks (low top score or no result), lognormal stage latencies.
The index/corpus version changes once (``corpus_change_day``): results for the same query change
that day because the corpus changed, which is not an incident.

Incidents (each listed in ``truth["incidents"]`` as ``{name, signal, start, end, day, segment, detail}``
with ``start``/``end`` ISO times, ``end`` exclusive; ``segment`` is ``{}`` for all traffic). With
``warm = max(1, days - 7)`` clean days first, they fall on:
  warm+0  ``error_burst``: 14:00-16:00 UTC, 35% 5xx and 15% client aborts (only the 5xx count)
          ``redaction_failure``: tenant initech all day, ~60% of sensitive tokens leak
  warm+1  ``latency_spike``: the rerank stage x4 all day
  warm+2  (``corpus_change_day``) and the non-incident ``abort_burst``: 10:00-11:00, 40% HTTP 499 only
  warm+3  ``deprecated_leak``: from 09:00 to the end of the day, the packed context of 40% of requests
          holds a chunk of the deprecated source ``legacy-kb``
  warm+4  ``index_instability``: same index_version as the day before, but 50% of requests get
          perturbed results (same query_key, different top-k)
  warm+5  ``bad_feedback_source``: feedback on requests citing source ``wiki`` is 75% negative
``truth["clean_days"]`` lists the days with no incident and no non-incident (per signal, any day
not named by an incident of that signal is clean for it). ``Spec(incidents=False)`` gives clean days
only. Needs ``days >= 7`` with incidents.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["ALL_FORMATS", "Spec", "generate", "logical"]

ALL_FORMATS = ("jsonl", "parquet", "otlp", "phoenix", "langfuse", "langsmith")
TENANTS = np.array(["acme", "globex", "initech"])
TENANT_P = np.array([0.5, 0.3, 0.2])
SURFACES = np.array(["chat", "search"])
DATA_SOURCES = np.array(["kb-main", "kb-support"])
SOURCES = np.array(["policies", "faq", "wiki", "tickets", "guides", "legacy-kb"])
LEGACY = 5  # index of the deprecated source
WIKI = 2
N_DOCS = 2003  # prime: a stride walk visits distinct chunks
CHUNKS_PER_DOC = 3
N_CAND, N_RERANK, N_PACK = 20, 10, 5
STAGES_MS = {"parse": (1.0, 0.3), "retrieval": (3.6, 0.35), "rerank": (3.0, 0.3), "synthesis": (6.6, 0.3)}
SOFT_DEADLINE_MS = 2500.0


@dataclass(frozen=True)
class Spec:
    days: int = 7
    per_day: int = 2000
    seed: int = 0
    start: str = "2026-05-01"
    incidents: bool = True
    documents: str = "json"  # OTLP gen_ai.retrieval.documents: "json" (a JSON string) or "array" (kvlists)
    reranked: bool = True  # False: no reranked stage in the outputs (20 candidates + 5 packed per request)


def _day_plan(spec: Spec) -> dict[str, int]:
    if not spec.incidents:
        return {"corpus_change_day": spec.days // 2}
    if spec.days < 7:
        raise ValueError("incidents need days >= 7 (or Spec(incidents=False))")
    w = max(1, spec.days - 7)
    return {"error_burst": w, "redaction_failure": w, "latency_spike": w + 1, "corpus_change_day": w + 2,
            "abort_burst": w + 2, "deprecated_leak": w + 3, "index_instability": w + 4, "bad_feedback_source": w + 5}


# -- the logical requests (numpy arrays) ---------------------------------------------------------------
def logical(spec: Spec) -> dict[str, Any]:
    """Every request as numpy arrays (one row per request; items as [N, 20] index matrices)."""
    rng = np.random.default_rng(spec.seed)
    plan = _day_plan(spec)
    n = spec.days * spec.per_day
    day = np.repeat(np.arange(spec.days), spec.per_day)
    # diurnal traffic: hour weights peak mid-afternoon
    hours = np.arange(24)
    hw = 1.0 + 0.8 * np.sin((hours - 8) / 24 * 2 * np.pi)
    hour = rng.choice(24, size=n, p=hw / hw.sum())
    usec = hour * 3_600_000_000 + rng.integers(0, 3_600_000_000, size=n)
    order = np.lexsort((usec, day))
    day, hour, usec = day[order], hour[order], usec[order]
    start = dt.datetime.fromisoformat(spec.start).replace(tzinfo=dt.timezone.utc)
    ts = int(start.timestamp()) * 1_000_000 + day.astype(np.int64) * 86_400_000_000 + usec

    # query pool: Zipf popularity, each query fixed to a tenant, data source and surface
    q_pool = max(200, min(20_000, spec.per_day // 4))
    pop = 1.0 / np.arange(1, q_pool + 1) ** 0.9
    q = rng.choice(q_pool, size=n, p=pop / pop.sum())
    q_tenant = rng.choice(3, size=q_pool, p=TENANT_P)
    q_ds = rng.integers(0, 2, size=q_pool)
    q_surface = rng.integers(0, 2, size=q_pool)
    q_low = rng.random(q_pool) < 0.1  # queries the index answers with low confidence

    # corpus: doc -> source, version; legacy-kb docs are deprecated
    doc_source = rng.choice(6, size=N_DOCS, p=[0.2, 0.2, 0.2, 0.15, 0.17, 0.08])
    doc_version = rng.integers(1, 4, size=N_DOCS)
    n_chunks = N_DOCS * CHUNKS_PER_DOC
    chunk_doc = np.arange(n_chunks) // CHUNKS_PER_DOC

    # results per (query, index version): a stride walk over documents gives 20 distinct docs
    change = plan["corpus_change_day"]
    version = (day >= change).astype(np.int64)  # index version 0 before the change, 1 from it

    def results(v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = np.random.default_rng([spec.seed, 7, v])
        start_doc = r.integers(0, N_DOCS, size=q_pool)
        stride = r.integers(1, N_DOCS, size=q_pool)
        docs = (start_doc[:, None] + np.arange(N_CAND)[None, :] * stride[:, None]) % N_DOCS
        chunks = docs * CHUNKS_PER_DOC + r.integers(0, CHUNKS_PER_DOC, size=(q_pool, N_CAND))
        top = np.where(q_low, r.beta(2, 6, size=q_pool), r.beta(6, 2, size=q_pool))
        gaps = r.exponential(0.015, size=(q_pool, N_CAND))
        gaps[:, 0] = 0
        scores = np.round(np.clip(top[:, None] - np.cumsum(gaps, axis=1), 0, 1), 4)
        rr_noise = r.normal(0, 0.02, size=(q_pool, N_RERANK))
        rr_order = np.argsort(-(scores[:, :N_RERANK] + rr_noise), axis=1, kind="stable")
        return chunks, scores, rr_order

    res = [results(0), results(1)]
    cand = np.where((version == 0)[:, None], res[0][0][q], res[1][0][q])
    score = np.where((version == 0)[:, None], res[0][1][q], res[1][1][q])
    rr_order = np.where((version == 0)[:, None], res[0][2][q], res[1][2][q])

    inc = spec.incidents
    # index instability: same version, perturbed results for half the requests of the day
    if inc:
        unstable = (day == plan["index_instability"]) & (rng.random(n) < 0.5)
        k = int(unstable.sum())
        repl = rng.integers(0, n_chunks, size=(k, N_CAND // 2))
        c = cand[unstable]
        c[:, N_CAND // 2:] = repl
        c[:, :N_CAND // 2] = c[:, rng.permutation(N_CAND // 2)]
        cand[unstable] = c
        rr_order[unstable] = np.argsort(rng.random((k, N_RERANK)), axis=1)
    # no-result requests
    no_result = rng.random(n) < 0.005
    n_items = np.where(no_result, 0, N_CAND)

    reranked = np.take_along_axis(cand[:, :N_RERANK], rr_order, axis=1)
    rr_score = np.round(1 / (1 + np.exp(-8 * (np.take_along_axis(score[:, :N_RERANK], rr_order, axis=1) - 0.5))), 4)
    leak = np.zeros(n, bool)
    if inc:
        leak = (day == plan["deprecated_leak"]) & (hour >= 9) & (rng.random(n) < 0.4) & ~no_result
        legacy_docs = np.flatnonzero(doc_source == LEGACY)
        reranked[leak, 1] = legacy_docs[rng.integers(0, len(legacy_docs), size=int(leak.sum()))] * CHUNKS_PER_DOC
    deprecated = doc_source[chunk_doc[reranked]] == LEGACY
    keep = ~deprecated | leak[:, None]
    pack_pos = np.argsort(~keep, axis=1, kind="stable")[:, :N_PACK]
    packed = np.take_along_axis(reranked, pack_pos, axis=1)
    n_packed = np.where(no_result, 0, np.minimum(keep.sum(axis=1), N_PACK))

    # status, errors, aborts
    u = rng.random(n)
    p5, p499 = np.full(n, 0.002), np.full(n, 0.003)
    if inc:
        burst = (day == plan["error_burst"]) & (hour >= 14) & (hour < 16)
        p5[burst], p499[burst] = 0.35, 0.15
        ab = (day == plan["abort_burst"]) & (hour == 10)
        p499[ab] = 0.40
    http = np.where(u < p5, np.where(rng.random(n) < 0.5, 500, 503), np.where(u < p5 + p499, 499, 200))
    # timings
    t = {s: np.round(np.exp(rng.normal(m, sd, size=n)), 3) for s, (m, sd) in STAGES_MS.items()}
    if inc:
        t["rerank"] = np.where(day == plan["latency_spike"], np.round(t["rerank"] * 4, 3), t["rerank"])
    t["total"] = np.round(t["parse"] + t["retrieval"] + t["rerank"] + t["synthesis"] + rng.exponential(5, n), 3)
    fallback = no_result | (score[:, 0] < 0.2)
    retry = rng.random(n) < 0.02
    # citations: packed[0] always, packed[1] half the time; 1% cite an older version
    n_cit = np.where((http != 200) | (n_packed == 0), 0, np.where((rng.random(n) < 0.5) & (n_packed > 1), 2, 1))
    stale = rng.random((n, 2)) < 0.01
    # feedback
    has_fb = (rng.random(n) < 0.10) & (n_cit > 0)
    p_neg = np.full(n, 0.15)
    if inc:
        bad = (day == plan["bad_feedback_source"]) & (doc_source[chunk_doc[packed[:, 0]]] == WIKI)
        p_neg[bad] = 0.75
    fb_neg = rng.random(n) < p_neg
    # privacy
    sensitive = rng.poisson(1.5, n)
    leaked = np.zeros(n, np.int64)
    tenant = q_tenant[q]
    if inc:
        red = (day == plan["redaction_failure"]) & (tenant == 2)
        leaked[red] = rng.binomial(sensitive[red], 0.6)
    return {
        "spec": spec, "plan": plan, "n": n, "day": day, "hour": hour, "ts": ts, "q": q, "q_low": q_low,
        "tenant": tenant, "surface": q_surface[q], "data_source": q_ds[q], "version": version,
        "cand": cand, "score": score, "reranked": reranked, "rr_score": rr_score, "packed": packed,
        "n_items": n_items, "n_packed": n_packed, "http": http, "timings": t, "fallback": fallback,
        "retry": retry, "n_cit": n_cit, "stale": stale, "has_fb": has_fb, "fb_neg": fb_neg,
        "sensitive": sensitive, "leaked": leaked, "secure": rng.poisson(1.0, n), "chunk_doc": chunk_doc,
        "doc_source": doc_source, "doc_version": doc_version, "trace_hex": rng.integers(0, 2**63, size=(n, 2)),
    }


def _arr(x: Any, typ: Any = None) -> pa.Array:
    """pa.array, always one chunk (numpy text arrays can come back chunked)."""
    a = pa.array(x, typ) if typ is not None else pa.array(x)
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _query_texts(q_pool: int) -> np.ndarray:
    verbs = ["reset", "change", "cancel", "renew", "export", "share", "delete", "restore"]
    topics = ["password", "invoice", "subscription", "api key", "refund", "workspace", "report", "sso"]
    return np.array([f"How do I {verbs[i % 8]} my {topics[(i // 8) % 8]} (case {i})?" for i in range(q_pool)])


def _iso(ts_us: np.ndarray) -> pa.Array:
    a = pa.array(ts_us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pc.strftime(a, format="%Y-%m-%dT%H:%M:%SZ")  # pyarrow's %S carries the microseconds


# -- rankgate records (nested Arrow) -----------------------------------------------------------------------
def records_table(L: dict[str, Any], *, iso: bool = False) -> pa.Table:
    """The rankgate trace records as one nested Arrow table (the JSONL shape; ``timestamp`` a
    timestamp column, or ISO text with ``iso``)."""
    n = L["n"]
    spec: Spec = L["spec"]
    cd, ds, dv = L["chunk_doc"], L["doc_source"], L["doc_version"]
    q_pool = int(L["q_low"].shape[0])
    texts = _query_texts(q_pool)
    rid = pc.binary_join_element_wise("r", pa.array(np.arange(n) + L.get("offset", 0)).cast(pa.string()), "")
    ver_names = np.array(["ix-1", "ix-2"])
    corp_names = np.array(["c-2026-04", "c-2026-05"])
    status = np.where(L["http"] == 200, "ok", "error")
    err = np.where(L["http"] == 499, "client_abort", np.where(L["http"] >= 500, "upstream_unavailable", None))

    def flat(mat: np.ndarray, scores: np.ndarray | None, counts: np.ndarray, stage: int) -> tuple[np.ndarray, ...]:
        width = mat.shape[1]
        mask = np.arange(width)[None, :] < counts[:, None]
        rows = np.broadcast_to(np.arange(n)[:, None], mat.shape)[mask]
        sc = scores[mask].astype(np.float64) if scores is not None else np.full(int(mask.sum()), np.nan)
        ranks = np.broadcast_to(np.arange(1, width + 1), mat.shape)[mask]
        return rows, np.full(len(rows), stage, np.int8), ranks, mat[mask], sc

    n_rr = np.minimum(L["n_items"], N_RERANK) if spec.reranked else np.zeros(n, np.int64)
    parts = [flat(L["cand"], L["score"], L["n_items"], 0), flat(L["reranked"], L["rr_score"], n_rr, 1),
             flat(L["packed"], None, L["n_packed"], 2)]
    rows, stage, ranks, chunk, sc = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((stage, rows))  # per request: candidates, then reranked, then packed (each in rank order)
    rows, stage, ranks, chunk, sc = rows[order], stage[order], ranks[order], chunk[order], sc[order]
    doc = cd[chunk]

    def vocab(words: Any, idx: np.ndarray) -> pa.Array:  # text from a small vocabulary, without numpy text
        return pa.array(list(words), pa.string()).take(pa.array(idx))

    doc_ids = pc.binary_join_element_wise("d", pa.array(doc).cast(pa.string()), "")
    struct = pa.StructArray.from_arrays(
        [vocab(("candidate", "reranked", "packed"), stage.astype(np.int64)), pa.array(ranks.astype(np.int64)),
         pc.binary_join_element_wise(doc_ids, pa.array(chunk % CHUNKS_PER_DOC).cast(pa.string()), "#"), doc_ids,
         pc.binary_join_element_wise("v", pa.array(dv[doc]).cast(pa.string()), ""),
         pa.array(sc, pa.float64(), from_pandas=True),
         vocab(("active", "deprecated"), (ds[doc] == LEGACY).astype(np.int64)), vocab(SOURCES, ds[doc]),
         vocab(TENANTS, L["tenant"][rows])],
        names=["stage", "rank", "id", "doc_id", "doc_version", "score", "status", "source", "tenant"])
    retrieved = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(L["n_items"] + n_rr + L["n_packed"])]).astype(np.int32)), struct)
    # citations
    ncit = L["n_cit"]
    cmask = np.arange(2)[None, :] < ncit[:, None]
    cchunks = L["packed"][:, :2][cmask]
    cdoc = cd[cchunks]
    cver = dv[cdoc] - (L["stale"][cmask] & (dv[cdoc] > 1))
    cits = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(ncit)]).astype(np.int32)),
        pa.StructArray.from_arrays([
            pc.binary_join_element_wise(pc.binary_join_element_wise("d", pa.array(cdoc).cast(pa.string()), ""),
                                        pa.array(cchunks % CHUNKS_PER_DOC).cast(pa.string()), "#"),
            pc.binary_join_element_wise("v", pa.array(cver).cast(pa.string()), "")], names=["id", "version"]))
    nfb = L["has_fb"].astype(np.int64)
    fbv = np.where(L["fb_neg"][L["has_fb"]], 0, 1)
    fb = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(nfb)]).astype(np.int32)),
        pa.StructArray.from_arrays([pa.array(fbv.astype(np.float64)),
                                    pa.array(np.where(fbv == 0, "not helpful", None), pa.string())],
                                   names=["value", "reason"]))  # (typed: a block may have no negative feedback)
    t = L["timings"]
    ts = _iso(L["ts"]) if iso else pa.array(L["ts"], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    trace_ids = [f"{a:016x}{b:016x}" for a, b in L["trace_hex"].tolist()]
    return pa.table({
        "request_id": rid,
        "timestamp": ts,
        "trace_id": trace_ids,
        "query": texts[L["q"]],
        "tenant": TENANTS[L["tenant"]],
        "surface": SURFACES[L["surface"]],
        "session": pc.binary_join_element_wise("s", pa.array(L["q"] * 7 + L["day"]).cast(pa.string()), ""),
        "data_source": DATA_SOURCES[L["data_source"]],
        "top_k": pa.array(np.full(n, N_CAND, np.int64)),
        "corpus_version": corp_names[L["version"]],
        "index_version": ver_names[L["version"]],
        "status": status,
        "http_status": pa.array(L["http"].astype(np.int64)),
        "error_type": pa.array(err, pa.string()),
        "client_abort": pa.array(L["http"] == 499),
        "fallback": pa.array(L["fallback"]),
        "timings_ms": pa.StructArray.from_arrays([pa.array(t[s]) for s in ("parse", "retrieval", "rerank", "synthesis",
                                                                         "total")],
                                                 names=["parse", "retrieval", "rerank", "synthesis", "total"]),
        "soft_deadline_ms": pa.array(np.full(n, SOFT_DEADLINE_MS)),
        "retry": pa.StructArray.from_arrays([pa.array(L["retry"].astype(np.int64)),
                                             pa.array(np.where(L["retry"], "timeout", None), pa.string())],
                                            names=["attempts", "reason"]),
        "privacy": pa.StructArray.from_arrays(
            [pa.array(np.full(n, "redact")), pa.array(L["sensitive"].astype(np.int64)), pa.array(L["leaked"]),
             pa.array(np.zeros(n, bool)), pa.array(L["secure"].astype(np.int64)), pa.array(np.zeros(n, np.int64))],
            names=["mode", "sensitive_tokens", "leaked_tokens", "blocked", "secure_fields", "bypassed"]),
        "retrieved": retrieved,
        "citations": cits,
        "feedback": fb,
    })


def write_corpus(L: dict[str, Any], path: Path) -> None:
    cd_count = N_DOCS * CHUNKS_PER_DOC
    with open(path, "w", encoding="utf-8") as fh:
        for c in range(cd_count):
            d = c // CHUNKS_PER_DOC
            fh.write(json.dumps({"chunk_id": f"d{d}#{c % CHUNKS_PER_DOC}", "doc_id": f"d{d}",
                                 "doc_version": f"v{L['doc_version'][d]}",
                                 "status": "deprecated" if L["doc_source"][d] == LEGACY else "active",
                                 "source": str(SOURCES[L["doc_source"][d]])}) + "\n")


def _truth(L: dict[str, Any]) -> dict[str, Any]:
    spec: Spec = L["spec"]
    plan = L["plan"]
    start = dt.datetime.fromisoformat(spec.start).replace(tzinfo=dt.timezone.utc)

    def at(day: int, hour: int = 0) -> str:
        return (start + dt.timedelta(days=day, hours=hour)).strftime("%Y-%m-%dT%H:%M:%SZ")

    inc: list[dict[str, Any]] = []
    non: list[dict[str, Any]] = []
    if spec.incidents:
        d = plan
        inc = [
            {"name": "error_burst", "signal": "error_rate", "day": d["error_burst"], "start": at(d["error_burst"], 14),
             "end": at(d["error_burst"], 16), "segment": {}, "detail": {"p_5xx": 0.35, "p_499": 0.15}},
            {"name": "redaction_failure", "signal": "redaction_efficacy", "day": d["redaction_failure"],
             "start": at(d["redaction_failure"]), "end": at(d["redaction_failure"] + 1),
             "segment": {"tenant": "initech"}, "detail": {"leak_share": 0.6}},
            {"name": "latency_spike", "signal": "latency.rerank", "day": d["latency_spike"],
             "start": at(d["latency_spike"]), "end": at(d["latency_spike"] + 1), "segment": {},
             "detail": {"stage": "rerank", "factor": 4}},
            {"name": "deprecated_leak", "signal": "deprecated_share", "day": d["deprecated_leak"],
             "start": at(d["deprecated_leak"], 9), "end": at(d["deprecated_leak"] + 1), "segment": {},
             "detail": {"source": "legacy-kb", "share_of_requests": 0.4}},
            {"name": "index_instability", "signal": "instability", "day": d["index_instability"],
             "start": at(d["index_instability"]), "end": at(d["index_instability"] + 1), "segment": {},
             "detail": {"index_version": "ix-2", "share_of_requests": 0.5}},
            {"name": "bad_feedback_source", "signal": "negative_feedback", "day": d["bad_feedback_source"],
             "start": at(d["bad_feedback_source"]), "end": at(d["bad_feedback_source"] + 1),
             "segment": {"source": "wiki"}, "detail": {"p_negative": 0.75, "baseline": 0.15}},
        ]
        non = [
            {"name": "abort_burst", "signal": "error_rate", "day": d["abort_burst"], "start": at(d["abort_burst"], 10),
             "end": at(d["abort_burst"], 11), "segment": {}, "detail": {"p_499": 0.4, "must_not_flag": True}},
            {"name": "corpus_change", "signal": "instability", "day": d["corpus_change_day"],
             "start": at(d["corpus_change_day"]), "end": at(d["corpus_change_day"] + 1), "segment": {},
             "detail": {"index_version": "ix-1 -> ix-2", "counts_as": "corpus_changed, not instability"}},
        ]
    busy = {x["day"] for x in inc + non}
    return {"spec": asdict(spec), "incidents": inc, "non_incidents": non,
            "clean_days": [d for d in range(spec.days) if d not in busy],
            "days": [at(d)[:10] for d in range(spec.days)], "abstention_hint": {"low_confidence_queries": 0.1}}


def generate(out_dir: str | os.PathLike[str], spec: Spec = Spec(), formats: tuple[str, ...] = ALL_FORMATS
             ) -> dict[str, Any]:
    """Write the traces in ``formats`` under ``out_dir`` (see the module docs); return the truth."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    unknown = set(formats) - set(ALL_FORMATS)
    if unknown:
        raise ValueError(f"unknown formats {sorted(unknown)}; formats: {', '.join(ALL_FORMATS)}")
    L = logical(spec)
    write_corpus(L, out / "corpus.jsonl")
    files: dict[str, list[str]] = {}
    if "parquet" in formats:
        (out / "parquet").mkdir(exist_ok=True)
        path = out / "parquet" / "traces.parquet"
        writer = None
        for part in _parts(L):
            t = records_table(part)
            writer = writer or pq.ParquetWriter(str(path) + ".tmp", t.schema, write_page_checksum=True)
            writer.write_table(t, row_group_size=CHUNK)
        if writer is not None:
            writer.close()
            os.replace(str(path) + ".tmp", path)
        files["parquet"] = ["parquet/traces.parquet"]
    if "jsonl" in formats:
        (out / "jsonl").mkdir(exist_ok=True)
        _write_jsonl((records_table(part, iso=True) for part in _parts(L)), out / "jsonl" / "traces.jsonl")
        files["jsonl"] = ["jsonl/traces.jsonl"]
    others = [f for f in formats if f not in ("jsonl", "parquet")]
    if others:
        here = os.path.dirname(os.path.abspath(__file__))
        if here not in sys.path:
            sys.path.insert(0, here)
        import trace_gen_formats as tf  # the per-request writers of the tools' export shapes

        recs = [r for part in _parts(L) for r in records_table(part, iso=True).to_pylist()]
        for fmt in others:
            files[fmt] = tf.WRITERS[fmt](recs, out / fmt, spec)
    truth = _truth(L)
    truth["files"] = files
    truth["formats_read_as"] = {"parquet": "jsonl", "jsonl": "jsonl", "otlp": "otlp", "phoenix": "phoenix",
                                "langfuse": "langfuse", "langsmith": "langsmith"}
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    return truth


CHUNK = 100_000  # requests per block written (bounds the generator's memory)


def _parts(L: dict[str, Any]) -> Any:
    """``L`` in blocks of :data:`CHUNK` requests (arrays sliced; the corpus arrays shared)."""
    n = L["n"]
    per_request = {k for k, v in L.items() if isinstance(v, np.ndarray) and v.shape[:1] == (n,)}
    for a in range(0, n, CHUNK):
        b = min(n, a + CHUNK)
        part = {k: (v[a:b] if k in per_request else v) for k, v in L.items()}
        part["timings"] = {k: v[a:b] for k, v in L["timings"].items()}
        part["n"], part["offset"] = b - a, a
        yield part


def _write_jsonl(tables: Any, path: Path) -> None:
    """JSON lines through DuckDB (columnar, fast), block by block; nulls are written as null, which
    readers treat as absent."""
    import duckdb

    tmp = str(path) + ".tmp"
    con = duckdb.connect()
    with open(tmp, "wb") as out:
        for i, table in enumerate(tables):
            con.register("t", table)
            part = f"{tmp}.{i}"
            con.execute(f"COPY t TO '{part}' (FORMAT json)")
            con.unregister("t")
            with open(part, "rb") as fh:
                while block := fh.read(1 << 24):
                    out.write(block)
            os.remove(part)
    con.close()
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Seeded synthetic retrieval traces with injected incidents.")
    ap.add_argument("out")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--per-day", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", default="2026-05-01")
    ap.add_argument("--formats", default="all", help=f"comma-separated: {','.join(ALL_FORMATS)} or all")
    ap.add_argument("--clean", action="store_true", help="no incidents")
    ap.add_argument("--documents", choices=("json", "array"), default="json")
    ap.add_argument("--no-reranked", action="store_true", help="omit the reranked stage (25 items per request)")
    a = ap.parse_args(argv)
    if not a.clean and a.days < 7:
        ap.error("the injected incidents need --days 7 or more (or --clean for days without incidents)")
    fmts = ALL_FORMATS if a.formats == "all" else tuple(a.formats.split(","))
    truth = generate(a.out, Spec(a.days, a.per_day, a.seed, a.start, not a.clean, a.documents, not a.no_reranked), fmts)
    print(json.dumps({"files": truth["files"], "incidents": [i["name"] for i in truth["incidents"]]}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    raise SystemExit(main())
